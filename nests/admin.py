"""The admin as the owner's control panel (docs/OPERATING.md "Admin").

Every change goes through the same action functions as the API and emits the same events,
with `by` (the staff user's username) in the payload: no raw edit of a status, a trust
level, a verdict or an event. This module can reach every app, so the panels that join
them live here: waiting approvals with their item's text, the crows with their flights
and trust, and nests with their members.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from flock.actions import EDITABLE_FIELDS, clean_crow_field, update_crow
from flock.admin import AppendOnlyAdmin, CheckedAdmin
from flock.brains import missing_key
from flock.errors import CrowsError
from flock.models import Crow, Flight
from flock.personas import TASK_TYPES
from flock.queries import roster_names
from nests import queries
from nests.actions import add_nest_member, remove_nest_member
from nests.models import Item, Nest, NestMessage
from trust.actions import answer_decision, quarantine_crow, record_owner_verdict, reinstate_crow, retire_crow
from trust.admin import who
from trust.models import LEVEL_NAMES, Approval, Breach, Decision, Verdict
from trust.queries import trust_balance

RECENT_FLIGHTS = 10

admin.site.site_header = "so-many-crows: the owner's control panel"
admin.site.site_title = "so-many-crows admin"
admin.site.index_title = "The flock, its trust and its nests"


# --- Waiting approvals ------------------------------------------------------------------


class Waiting(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("waiting", "waiting for the owner"), ("decided", "decided")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Approval]) -> QuerySet[Approval]:
        if self.value() == "waiting":
            return queryset.filter(verdict__isnull=True)
        if self.value() == "decided":
            return queryset.filter(verdict__isnull=False)
        return queryset


def _subject(approval: Approval) -> tuple[str, str]:
    """(the item's text, the answer or call to judge) for a list item or a chat delivery."""
    item = Item.objects.filter(item_id=approval.item_id).first()
    if item is not None:
        if approval.target == "triage":
            call = f"{item.mode or '?'} {item.task_type or ''}: {item.reason}".strip()
            if item.subtasks:
                call += " | subtasks: " + "; ".join(str(s) for s in item.subtasks)
            return item.text, call
        return item.text, item.answer
    # A chat delivery waits under its msg_id; the request it answers is its item text.
    delivery = NestMessage.objects.filter(msg_id=approval.item_id).first()
    if delivery is not None:
        request = NestMessage.objects.filter(msg_id=delivery.refers_to).first() if delivery.refers_to else None
        return (request.text if request else "(chat delivery)"), delivery.text
    return "(gone)", ""


@admin.register(Approval)
class ApprovalAdmin(AppendOnlyAdmin):
    """Targets waiting for the owner: list items (triage calls and answers) and chat
    deliveries. Approve/Reject record the verdict through the API's own action."""

    list_display = ("item_id", "target", "item_text", "to_judge", "task_type", "whose_trust", "deadline", "state")
    list_filter = (Waiting, "target", "task_type")
    search_fields = ("=item_id", "=list_id")
    ordering = ("deadline", "id")
    actions = ["approve", "reject"]
    readonly_fields = ("item_id", "target", "list_id", "task_type", "holders", "opened_at", "deadline", "item_text", "to_judge", "state")

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> Any:
        # Open on what needs the owner: the waiting ones, unless a state was picked.
        if "state" not in request.GET and not request.POST and "e" not in request.GET:
            query = request.GET.copy()
            query["state"] = "waiting"
            request.GET = query  # type: ignore[assignment]  # a mutable copy, on purpose
            request.META["QUERY_STRING"] = query.urlencode()
        return super().changelist_view(request, extra_context)

    @admin.display(description="whose trust it moves")
    def whose_trust(self, obj: Approval) -> str:
        return ", ".join(obj.holders)

    @admin.display(description="item")
    def item_text(self, obj: Approval) -> str:
        return _subject(obj)[0]

    @admin.display(description="answer / call to judge")
    def to_judge(self, obj: Approval) -> str:
        return _subject(obj)[1]

    @admin.display(description="state")
    def state(self, obj: Approval) -> str:
        verdict = Verdict.objects.filter(approval=obj).values_list("verdict", flat=True).first()
        if verdict:
            return verdict
        return "waiting" if obj.deadline > timezone.now() else "overdue"

    def _answer(self, request: HttpRequest, queryset: QuerySet[Approval], approve: bool) -> None:
        done = []
        for approval in queryset:
            try:
                record_owner_verdict(approval.item_id, target=approval.target, approve=approve, by=who(request))
            except CrowsError as exc:
                self.message_user(request, f"Approval {approval}: {exc.message}", messages.WARNING)
            else:
                done.append(str(approval))
        if done:
            word = "Approved" if approve else "Rejected"
            self.message_user(request, f"{word} {', '.join(done)}", messages.SUCCESS)

    @admin.action(description="Approve (verdict: approved)")
    def approve(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._answer(request, queryset, True)

    @admin.action(description="Reject (verdict: rejected)")
    def reject(self, request: HttpRequest, queryset: QuerySet[Approval]) -> None:
        self._answer(request, queryset, False)


# --- Crows -------------------------------------------------------------------------------


class CrowForm(forms.ModelForm):
    """Checks each edited field with update_crow's own rules, so a bad value is a form
    error, not a failed save."""

    class Meta:
        model = Crow
        fields = ("epithet", "strength", "backstory", "persona", "voice", "model")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for field in self.changed_data:
            if field in EDITABLE_FIELDS and field in data:
                try:
                    data[field] = clean_crow_field(field, data[field])
                except CrowsError as exc:
                    self.add_error(field, exc.message)
        return data


@admin.register(Crow)
class CrowAdmin(CheckedAdmin):
    form = CrowForm
    list_display = ("name", "epithet", "role", "status", "brain", "on_the_roster")
    list_filter = ("status", "role")
    search_fields = ("name", "epithet", "strength")
    actions = ["quarantine", "reinstate", "retire"]
    fieldsets = (
        (None, {"fields": ("name", "status", "role", "in_roster", "hatched_by", "created_at")}),
        ("Persona (saved through update_crow: emits crow.updated)", {
            "fields": ("epithet", "strength", "backstory", "persona", "voice", "model"),
        }),
        ("Trust and recent flights", {"fields": ("trust_table", "recent_flights")}),
    )
    readonly_fields = ("name", "status", "role", "in_roster", "hatched_by", "created_at", "trust_table", "recent_flights")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # crows are hatched (Boss, load_personas), never made raw

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a crow is retired, and its history stays

    def get_readonly_fields(self, request: HttpRequest, obj: Crow | None = None) -> Any:
        if obj is not None and obj.status == Crow.Status.RETIRED:
            return (*self.readonly_fields, "epithet", "strength", "backstory", "persona", "voice", "model")
        return self.readonly_fields

    @admin.display(description="model")
    def brain(self, obj: Crow) -> str:
        return obj.brain_spec

    @admin.display(description="in roster", boolean=True)
    def on_the_roster(self, obj: Crow) -> bool:
        # A retired crow keeps its flag as history, but is on no roster any more.
        return obj.in_roster and obj.status != Crow.Status.RETIRED

    @admin.display(description="trust per task type")
    def trust_table(self, obj: Crow) -> str:
        rows = []
        for task_type in TASK_TYPES:
            level, streak = trust_balance(obj.name, task_type)
            rows.append((task_type, f"{level} {LEVEL_NAMES[level]}", streak))
        return format_html(
            "<table><tr><th>task type</th><th>level</th><th>streak</th></tr>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="recent flights")
    def recent_flights(self, obj: Crow) -> str:
        flights = Flight.objects.filter(crow=obj.name).order_by("-id")[:RECENT_FLIGHTS]
        rows = [
            (f.created_at.strftime("%Y-%m-%d %H:%M:%S"), f.task, f.task_type, f"{f.provider}:{f.model}",
             "ok" if f.ok else f"failed: {f.error[:80]}", f.tokens_in + f.tokens_out, round(f.latency_ms))
            for f in flights
        ]
        if not rows:
            return "no flights yet"
        return format_html(
            "<table><tr><th>when</th><th>task</th><th>type</th><th>model</th><th>result</th><th>tokens</th><th>ms</th></tr>{}</table>",
            format_html_join("", "<tr>" + "<td>{}</td>" * 7 + "</tr>", rows),
        )

    def save_model(self, request: HttpRequest, obj: Crow, form: forms.ModelForm, change: bool) -> None:
        # Never obj.save(): the change goes through update_crow, which emits crow.updated.
        fields = {f: form.cleaned_data[f] for f in form.changed_data if f in EDITABLE_FIELDS}
        if not fields:
            return
        try:
            update_crow(obj.name, by=who(request), **fields)
        except CrowsError as exc:
            self.message_user(request, f"{obj.name} not changed: {exc.message}", messages.ERROR)
            return
        where = missing_key(fields["model"]) if fields.get("model") else ""
        if where:
            # Saved all the same (the key may come later), but every call would fail until then.
            self.message_user(
                request, f"{obj.name} now uses {fields['model']}, but no API key is set for it: set {where} in "
                "the server's environment; until then each of its calls fails.", messages.WARNING,
            )

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: Any, change: bool) -> None:
        return None  # nothing related is edited here

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None  # the event log records the change (crow.updated with `by`)

    @admin.action(description="Quarantine (emits crow.quarantined)")
    def quarantine(self, request: HttpRequest, queryset: QuerySet[Crow]) -> None:
        for crow in queryset:
            try:
                quarantine_crow(crow, breach="owner_report", evidence="quarantined by the owner from the admin", by=who(request))
            except CrowsError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Quarantined {crow.name}", messages.SUCCESS)

    @admin.action(description="Reinstate (emits crow.reinstated)")
    def reinstate(self, request: HttpRequest, queryset: QuerySet[Crow]) -> None:
        for crow in queryset:
            try:
                reinstate_crow(crow, by=who(request))
            except CrowsError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Reinstated {crow.name}", messages.SUCCESS)

    @admin.action(description="Retire (emits crow.retired)")
    def retire(self, request: HttpRequest, queryset: QuerySet[Crow]) -> None:
        for crow in queryset:
            holding = queries.open_claims_of(crow.name)
            if holding:
                self.message_user(request, f"{crow.name} still holds {', '.join(holding)}; not retired", messages.WARNING)
                continue
            try:
                # trust's retire: it also closes any open decision about the crow as `retired`.
                retire_crow(crow.name, by=who(request), reason="retired from the admin")
            except CrowsError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Retired {crow.name}", messages.SUCCESS)


# --- Nests -------------------------------------------------------------------------------


class MemberActionForm(ActionForm):
    crow = forms.ChoiceField(required=False, label="crow", choices=())

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

        crow_field = self.fields["crow"]
        assert isinstance(crow_field, forms.ChoiceField)
        crow_field.choices = [("", "(crow)")] + [(n, n) for n in roster_names()]


@admin.register(Nest)
class NestAdmin(AppendOnlyAdmin):
    list_display = ("nest_id", "name", "kind", "members", "created_by", "created_at")
    list_filter = ("kind",)
    search_fields = ("nest_id", "name")
    action_form = MemberActionForm
    actions = ["add_member", "remove_member"]

    @admin.display(description="core members")
    def members(self, obj: Nest) -> str:
        return ", ".join(obj.core) or ("the whole flock" if obj.kind == Nest.Kind.OPEN else "")

    def _members(self, request: HttpRequest, queryset: QuerySet[Nest], add: bool) -> None:
        crow = request.POST.get("crow", "").strip()
        if not crow:
            self.message_user(request, "Pick a crow in the box beside the action first.", messages.ERROR)
            return
        change = add_nest_member if add else remove_nest_member
        for nest in queryset:
            try:
                change(nest.nest_id, crow, by=who(request))
            except CrowsError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                word = "Added" if add else "Removed"
                self.message_user(request, f"{word} {crow} {'to' if add else 'from'} {nest.nest_id}", messages.SUCCESS)

    @admin.action(description="Add the chosen crow (emits nest.members_changed)")
    def add_member(self, request: HttpRequest, queryset: QuerySet[Nest]) -> None:
        self._members(request, queryset, True)

    @admin.action(description="Remove the chosen crow (emits nest.members_changed)")
    def remove_member(self, request: HttpRequest, queryset: QuerySet[Nest]) -> None:
        self._members(request, queryset, False)


@admin.register(NestMessage)
class NestMessageAdmin(AppendOnlyAdmin):
    list_display = ("msg_id", "kind", "author", "to", "tagged_by", "created_at")
    list_filter = ("kind", "tagged_by")
    search_fields = ("=msg_id", "author", "text")
    ordering = ("-id",)


# --- Owner decisions ---------------------------------------------------------------------


class DecisionAdmin(AppendOnlyAdmin):
    """Owner decisions: the question, the evidence and the recommendation, answered with
    one click: the exact phrase (reinstates), Retire, or No (keeps the crow quarantined).
    Each answer goes through answer_decision, like the API and the room."""

    list_display = ("decision_id", "status", "subject", "crow", "question", "recommendation", "deadline", "outcome", "answer_buttons")
    list_filter = ("status", "kind", "outcome")
    search_fields = ("=decision_id", "crow", "subject")
    ordering = ("-id",)
    readonly_fields = ("answer_buttons",)
    ANSWERS = {"phrase", "retire", "no"}

    def get_urls(self) -> list:
        from django.urls import path

        own = [
            path(
                "<path:object_id>/answer/",
                self.admin_site.admin_view(self.answer_view),
                name=f"{self.opts.app_label}_{self.opts.model_name}_answer",
            )
        ]
        return own + super().get_urls()

    @admin.display(description="answer")
    def answer_buttons(self, obj: Any) -> str:
        if obj.status != "open":
            return f"{obj.outcome} ({obj.answered_by})" if obj.outcome else ""
        from django.urls import reverse

        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_answer", args=[obj.pk])
        # Buttons inside the changelist's form post it (with its CSRF token) to the answer view.
        buttons = []
        if obj.phrase:
            buttons.append(format_html('<button type="submit" class="button" formaction="{}" formmethod="post" name="answer" value="phrase">{}</button>', url, obj.phrase))
        if obj.kind == "quarantine":
            buttons.append(format_html('<button type="submit" class="button" formaction="{}" formmethod="post" name="answer" value="retire">Retire {}</button>', url, obj.crow))
        buttons.append(format_html('<button type="submit" class="button" formaction="{}" formmethod="post" name="answer" value="no">No</button>', url))
        return format_html_join(" ", "{}", ((b,) for b in buttons))

    def answer_view(self, request: HttpRequest, object_id: str) -> Any:
        from django.http import HttpResponseNotAllowed, HttpResponseRedirect
        from django.urls import reverse

        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        decision = self.get_object(request, object_id)
        back = HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))
        choice = request.POST.get("answer", "")
        if decision is None or choice not in self.ANSWERS:
            self.message_user(request, "Pick the phrase, Retire or No on an open decision.", messages.ERROR)
            return back
        if (choice == "retire" and decision.kind != Decision.Kind.QUARANTINE) or (choice == "phrase" and not decision.phrase):
            # Not a button this decision shows: "retire" would be read as any other answer.
            self.message_user(request, f"Decision {decision.decision_id} has no {choice} answer.", messages.ERROR)
            return back
        text = {"phrase": decision.phrase, "retire": "retire", "no": "no"}[choice]
        try:
            closed = answer_decision(decision.decision_id, answer=text, by=who(request))
        except CrowsError as exc:
            self.message_user(request, f"Decision {decision.decision_id}: {exc.message}", messages.WARNING)
        else:
            self.message_user(request, f"Decision {closed.decision_id}: {closed.outcome}", messages.SUCCESS)
        return back


class BreachAdmin(AppendOnlyAdmin):
    """The Sentry's breach log: append-only, read-only."""

    list_display = ("at", "crow", "kind", "score", "flagged", "nest_id", "msg_id", "evidence")
    list_filter = ("kind", "flagged", "crow")
    search_fields = ("crow", "=nest_id", "=msg_id")
    ordering = ("-id",)


admin.site.register(Decision, DecisionAdmin)
admin.site.register(Breach, BreachAdmin)
