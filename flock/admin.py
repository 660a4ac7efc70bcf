"""The flock's logs in the admin: read-only and undeletable (docs/OPERATING.md "Admin").

The crows themselves are edited from nests/admin.py, the one admin module that can reach
every app (a crow's trust and rooms live in trust and nests)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from flock.models import Event, Flight, JevTag


class AppendOnlyAdmin(admin.ModelAdmin):
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
