from django.contrib import admin

from flock.models import Crow, Event, Flight, JevTag


@admin.register(Crow)
class CrowAdmin(admin.ModelAdmin):
    list_display = ("name", "epithet", "role", "status", "model")


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "list_key", "nest_key", "created_at")
    list_filter = ("name",)

    def has_change_permission(self, request, obj=None):  # the log is append-only
        return False


@admin.register(Flight)
class FlightAdmin(admin.ModelAdmin):
    list_display = ("created_at", "crow", "model", "task", "task_type", "ok", "latency_ms")


@admin.register(JevTag)
class JevTagAdmin(admin.ModelAdmin):
    list_display = ("created_at", "question", "choice", "band", "source", "subject")
