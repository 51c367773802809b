"""Admin: every team's training jobs, read-only (changes go through the services, as on every face)."""

from django.contrib import admin

from .models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "recipe", "kind", "status", "restarts_used", "max_retries", "gpus", "created_at"]
    list_filter = ["status", "recipe", "kind", "cluster__team"]
    search_fields = ["name", "k8s_name", "cluster__name"]
    readonly_fields = [f.name for f in Job._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
