from django.contrib import admin, messages

from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.roles import Role

from .models import AuditEvent, Operation, Phase
from .models_health import WorkerHeartbeat
from .services import OperationStateError, cancel_operation, retry_operation


class PhaseInline(admin.TabularInline):
    model = Phase
    extra = 0
    can_delete = False
    fields = ["index", "name", "status", "attempts", "message", "state", "started_at", "finished_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


def _staff_access(request, operation: Operation) -> Access:
    return Access(user=request.user, team=operation.team, role=Role.ADMIN, via=Via.ADMIN)


@admin.action(description="Retry selected operations (resume at the failed phase)")
def retry_selected(modeladmin, request, queryset):
    for operation in queryset:
        try:
            retry_operation(access=_staff_access(request, operation), operation=operation)
        except OperationStateError as exc:
            modeladmin.message_user(request, f"{operation}: {exc}", messages.WARNING)


@admin.action(description="Cancel selected operations")
def cancel_selected(modeladmin, request, queryset):
    for operation in queryset:
        try:
            cancel_operation(access=_staff_access(request, operation), operation=operation)
        except OperationStateError as exc:
            modeladmin.message_user(request, f"{operation}: {exc}", messages.WARNING)


@admin.register(Operation)
class OperationAdmin(admin.ModelAdmin):
    list_display = ["id", "team", "kind", "target_repr", "status", "via", "requested_by", "created_at", "finished_at"]
    list_filter = ["status", "kind", "via", "team"]
    search_fields = ["id", "target_repr", "kind", "idempotency_key"]
    inlines = [PhaseInline]
    actions = [retry_selected, cancel_selected]
    readonly_fields = [
        "id",
        "team",
        "kind",
        "target_type",
        "target_id",
        "target_repr",
        "params",
        "requested_by",
        "via",
        "status",
        "error_code",
        "error_message",
        "error_hint",
        "idempotency_key",
        "cancel_requested",
        "lease_token",
        "lease_until",
        "wake_at",
        "enqueued_at",
        "advance_count",
        "created_at",
        "started_at",
        "finished_at",
    ]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "team", "actor", "via", "action", "target_repr"]
    list_filter = ["via", "action", "team"]
    search_fields = ["action", "target_repr", "actor__username"]
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["hostname", "last_seen"]
