"""The flock's logs in the admin: read-only and undeletable (docs/OPERATING.md "Admin").

The crows themselves are edited from nests/admin.py, the one admin module that can reach
every app (a crow's trust and rooms live in trust and nests)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import ValidationError
from django.db import DataError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from flock.models import Event, Flight, JevTag

# The largest id a row can have (a 64-bit integer column); a larger one names no row.
_MAX_ID = 2**63 - 1


class CheckedAdmin(admin.ModelAdmin):
    """Hand-made input the admin's own pages never send gets a clear answer, not the server
    error stock Django gives it:
    - an action on ids that are not ids of the model (`_selected_action=abc`, or a number
      too large for the column): a message, and nothing done;
    - a changelist lookup whose value the database cannot take (`?id__in=<a 30-digit
      number>`, `?created_at__year=0`, a date drill-down past year 9999): Django's own
      answer to a bad lookup, the changelist with `?e=1`;
    - a regular-expression lookup (`?name__regex=(`): refused as a disallowed lookup (400)."""

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        if lookup.endswith(("__regex", "__iregex")):
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        try:
            return super().get_changelist_instance(request)
        except (ValueError, OverflowError, DataError) as exc:
            # Raised while the changelist reads its filters and counts its rows: the
            # lookup's value is out of the column's or the calendar's range, or holds what
            # the database cannot store (a NUL, on PostgreSQL).
            raise IncorrectLookupParameters(exc) from exc

    def response_action(self, request: HttpRequest, queryset: Any, *args: Any, **kwargs: Any) -> HttpResponse | None:
        bad = [value for value in request.POST.getlist(ACTION_CHECKBOX_NAME) if not self._is_id(value)]
        if bad:
            shown = ", ".join(repr(value[:40]) for value in bad[:3]) + (" …" if len(bad) > 3 else "")
            self.message_user(
                request, f"Nothing was done: {shown} is not the id of any {self.model._meta.verbose_name}.",
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset, *args, **kwargs)

    def _is_id(self, value: str) -> bool:
        try:
            pk = self.model._meta.pk.to_python(value)
        except ValidationError:
            return False
        return not isinstance(pk, int) or -_MAX_ID <= pk <= _MAX_ID


class AppendOnlyAdmin(CheckedAdmin):
    """An append-only log: the admin may read it and never add, change or delete a row.

    Without delete permission the changelist also loses `delete_selected`."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Event)
class EventAdmin(AppendOnlyAdmin):
    list_display = ("id", "name", "list_key", "nest_key", "created_at")
    list_filter = ("name", "created_at")
    # Search by name, list, nest, item, message, crow or trust holder; the date drill-down
    # and filter cover dates. A room's events on the firehose only (nest.created,
    # expectation.*) name it in their payload, not in nest_key: the search reads both.
    search_fields = (
        "name", "=list_key", "=nest_key", "=payload__nest_id", "=payload__item_id", "=payload__msg_id",
        "payload__crow__iexact", "payload__author__iexact", "payload__holder__iexact",
    )
    date_hierarchy = "created_at"
    ordering = ("-id",)


@admin.register(Flight)
class FlightAdmin(AppendOnlyAdmin):
    list_display = ("created_at", "crow", "provider", "model", "task", "task_type", "ok", "tokens_in", "tokens_out", "latency_ms")
    list_filter = ("ok", "crow", "task", "task_type", "model")
    search_fields = ("crow", "model", "=list_id", "=item_id", "=nest_id", "=msg_id")
    date_hierarchy = "created_at"
    ordering = ("-id",)


@admin.register(JevTag)
class JevTagAdmin(AppendOnlyAdmin):
    list_display = ("created_at", "question", "choice", "band", "source", "subject")
    list_filter = ("question", "band", "source")
    search_fields = ("=subject", "choice")
    date_hierarchy = "created_at"
    ordering = ("-id",)


def check_every_panel(site: admin.AdminSite = admin.site) -> None:
    """Give every panel registered by another app (Django's Users and Groups, the task
    results of django-tasks-db) the checks of CheckedAdmin: re-registered as a subclass of
    its own admin class. Run once every admin module is loaded (flock's ready())."""
    for model, model_admin in list(site._registry.items()):
        own = type(model_admin)
        if not isinstance(model_admin, CheckedAdmin):
            site.unregister(model)
            site.register(model, type(own.__name__, (CheckedAdmin, own), {"__module__": own.__module__}))
