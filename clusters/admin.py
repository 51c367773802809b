from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from .models import ActiveCluster, Cluster, ComputeSubnet, InstanceGroup, Storage
from .selectors import operations_of


class InstanceGroupInline(admin.TabularInline):
    model = InstanceGroup
    extra = 0
    fields = ["name", "instance_type", "count", "capacity_type", "efa_only", "availability_zone", "subnet_id", "status"]
    readonly_fields = fields


class ComputeSubnetInline(admin.TabularInline):
    model = ComputeSubnet
    extra = 0
    readonly_fields = ["availability_zone", "cidr", "subnet_id"]


class StorageInline(admin.TabularInline):
    model = Storage
    extra = 0
    fields = ["name", "kind", "bucket", "file_system_id", "namespace", "claim_name", "status", "managed"]
    readonly_fields = fields


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "region", "availability_zone", "status", "managed", "created_at"]
    list_filter = ["status", "region", "managed", "team"]
    search_fields = ["name", "eks_cluster_name", "hyperpod_cluster_name", "vpc_id"]
    inlines = [InstanceGroupInline, ComputeSubnetInline, StorageInline]
    readonly_fields = [
        "id",
        "team",
        "name",
        "region",
        "availability_zone",
        "kubernetes_version",
        "storage",
        "status",
        "managed",
        "eks_cluster_name",
        "eks_cluster_arn",
        "eks_endpoint",
        "hyperpod_cluster_name",
        "hyperpod_cluster_arn",
        "vpc_id",
        "vpc_cidr",
        "network",
        "identity",
        "versions",
        "node_summary",
        "created_by",
        "created_at",
        "operations",
    ]

    @admin.display(description="Operations")
    def operations(self, cluster: Cluster):
        rows = operations_of(cluster).order_by("-created_at")[:20]
        return format_html_join(
            "",
            '<div><a href="{}">{}</a> — {} ({})</div>',
            (
                (
                    reverse("admin:operations_operation_change", args=[op.pk]),
                    op.kind,
                    op.status,
                    op.created_at.strftime("%Y-%m-%d %H:%M"),
                )
                for op in rows
            ),
        ) or format_html("<em>none</em>")

    def has_add_permission(self, request) -> bool:
        # Clusters are created through the portal, REST or MCP, which start the operation.
        return False


@admin.register(ActiveCluster)
class ActiveClusterAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "cluster"]
