"""Admin: features per cluster, with the actual state read from the cloud on the change page (read-only)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html_join

from .models import ClusterFeature


@admin.register(ClusterFeature)
class ClusterFeatureAdmin(admin.ModelAdmin):
    list_display = ("cluster", "name", "desired", "installed", "updated_at")
    list_filter = ("name", "desired", "cluster__team")
    search_fields = ("cluster__name", "name")
    readonly_fields = ("cluster", "name", "desired", "settings", "installed", "updated_at", "actual_state")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Actual state (read now)")
    def actual_state(self, obj: ClusterFeature):
        from .selectors import features_now

        try:
            rows, _ = features_now(obj.cluster)
        except Exception as exc:  # noqa: BLE001 - the admin page shows the error instead of failing
            return f"could not read: {exc}"
        return format_html_join(
            "",
            "<div>{}: {} ({}){}</div>",
            ((r["name"], r["status"], r["detail"], " DRIFT" if r["drift"] else "") for r in rows),
        )
