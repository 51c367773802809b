from django.contrib import admin

from .models import ApiToken, Membership, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "cloud", "default_region", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]
    # The external ID is write-only everywhere; staff set it through the team settings form.
    exclude = ["aws_external_id"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__slug"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "team", "user", "role", "created_at", "expires_at", "revoked_at", "last_used_at"]
    list_filter = ["team", "role"]
    readonly_fields = ["prefix", "token_hash", "created_at", "last_used_at"]
    search_fields = ["name", "prefix"]

    def has_add_permission(self, request) -> bool:
        # A token's secret is shown once at creation: create them in the portal, REST or the command.
        return False
