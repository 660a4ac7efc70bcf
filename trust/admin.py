"""Trust in the admin (docs/OPERATING.md "Admin"): the ledger and verdicts read-only, the
balances per holder and task type with Reset-to-stranger, strikes with Lift-cooldown.
Every change goes through trust's actions, which emit events carrying `by`.

Waiting approvals are administered from nests/admin.py, which can show the item's text."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from flock.admin import AppendOnlyAdmin
from flock.errors import CrowsError
from trust.actions import lift_cooldown, reset_trust
from trust.models import LEVEL_NAMES, Strike, TrustEntry, TrustHolder, Verdict
from trust.queries import trust_balance


def who(request: HttpRequest) -> str:
    """`by` for events caused from the admin: "admin:<the staff user's username>"."""
    return f"admin:{request.user.get_username()}"


@admin.register(TrustEntry)
class TrustEntryAdmin(AppendOnlyAdmin):
    list_display = ("at", "holder", "task_type", "outcome", "source", "level_before", "level", "streak", "list_id", "item_id")
    list_filter = ("holder", "task_type", "outcome", "source")
    search_fields = ("=holder", "=list_id", "=item_id")
    ordering = ("-id",)


@admin.register(TrustHolder)
class TrustHolderAdmin(AppendOnlyAdmin):
    """One row per holder and task type the ledger has touched, with its balance."""

    list_display = ("holder", "task_type", "level", "streak")
    list_filter = ("holder", "task_type")
    search_fields = ("=holder",)
    ordering = ("holder", "task_type")
    actions = ["reset_to_stranger"]

    @admin.display(description="level")
    def level(self, obj: TrustHolder) -> str:
        level = trust_balance(obj.holder, obj.task_type)[0]
        return f"{level} {LEVEL_NAMES[level]}"

    @admin.display(description="streak")
    def streak(self, obj: TrustHolder) -> int:
        return trust_balance(obj.holder, obj.task_type)[1]

    @admin.action(description="Reset to stranger (emits trust.changed)")
    def reset_to_stranger(self, request: HttpRequest, queryset: QuerySet[TrustHolder]) -> None:
        done, already = [], []
        for row in queryset:
            try:
                entry = reset_trust(row.holder, task_type=row.task_type, by=who(request))
            except CrowsError as exc:
                self.message_user(request, f"{row}: {exc.message}", messages.ERROR)
                continue
            (done if entry is not None else already).append(str(row))
        if done:
            self.message_user(request, f"Reset to stranger: {', '.join(done)}", messages.SUCCESS)
        if already:
            self.message_user(request, f"Already strangers: {', '.join(already)}", messages.WARNING)


class CoolingDown(admin.SimpleListFilter):
    title = "cooldown"
    parameter_name = "cooling"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "cooling down now"), ("no", "over")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Strike]) -> QuerySet[Strike]:
        if self.value() == "yes":
            return queryset.filter(until__gt=timezone.now())
        if self.value() == "no":
            return queryset.filter(until__lte=timezone.now())
        return queryset


@admin.register(Strike)
class StrikeAdmin(AppendOnlyAdmin):
    list_display = ("at", "key", "kind", "cooldown_s", "until", "cooling_down", "message")
    list_filter = (CoolingDown, "kind")
    search_fields = ("key",)
    ordering = ("-id",)
    actions = ["lift_cooldowns"]

    @admin.display(boolean=True, description="cooling down")
    def cooling_down(self, obj: Strike) -> bool:
        return obj.until > timezone.now()

    @admin.action(description="Lift cooldown (emits requester.cooldown_lifted)")
    def lift_cooldowns(self, request: HttpRequest, queryset: QuerySet[Strike]) -> None:
        for key in sorted(set(queryset.values_list("key", flat=True))):
            try:
                lift_cooldown(key, by=who(request))
            except CrowsError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Lifted the cooldown of {key}", messages.SUCCESS)


@admin.register(Verdict)
class VerdictAdmin(AppendOnlyAdmin):
    list_display = ("decided_at", "item_id", "target", "verdict", "list_id")
    list_filter = ("verdict", "target")
    search_fields = ("=item_id", "=list_id")
    ordering = ("-id",)
