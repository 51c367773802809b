from django.contrib import admin

from .models import Endpoint, ModelDownload


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "mode", "engine", "service", "replicas", "status", "created_at")
    list_filter = ("mode", "engine", "service", "status")
    search_fields = ("name", "cluster__name", "cluster__team__slug")
    readonly_fields = ("manifest", "created_at", "updated_at")


@admin.register(ModelDownload)
class ModelDownloadAdmin(admin.ModelAdmin):
    list_display = ("repo_id", "cluster", "kind", "target", "status", "size_bytes", "created_at")
    list_filter = ("kind", "target", "status")
    search_fields = ("repo_id", "cluster__name")
