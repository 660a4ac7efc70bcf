from django.contrib import admin

from trust.models import Approval, TrustEntry, Verdict


@admin.register(TrustEntry)
class TrustEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "holder", "task_type", "outcome", "source", "level_before", "level", "streak", "list_id")
    list_filter = ("holder", "task_type", "outcome")

    def has_change_permission(self, request, obj=None):  # the ledger is append-only
        return False


@admin.register(Approval)
class ApprovalAdmin(admin.ModelAdmin):
    list_display = ("item_id", "target", "task_type", "deadline", "opened_at")


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ("item_id", "target", "verdict", "decided_at")

    def has_change_permission(self, request, obj=None):
        return False
