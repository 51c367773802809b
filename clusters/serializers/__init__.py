"""All input validation of the clusters app — body, cross-field, cross-object, against the cloud —
and the representations every face answers with. REST, MCP and the portal use the same classes.

clusters.py   clusters: create, zone change, import, the cluster itself
groups.py     instance groups: add, scale, and their checks against the catalog and quotas
storage.py    storage: attach, and the storage itself
queries.py    query parameters (region, health, force), also parsed by the portal
"""

from .clusters import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSIONS,
    ClusterCreateSerializer,
    ClusterImportSerializer,
    ClusterSerializer,
    ClusterZoneChangeSerializer,
)
from .groups import InstanceGroupAddSerializer, InstanceGroupSerializer, InstanceGroupUpdateSerializer
from .storage import StorageAttachSerializer, StorageSerializer

__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
    "KUBERNETES_VERSIONS",
    "ClusterCreateSerializer",
    "ClusterImportSerializer",
    "ClusterSerializer",
    "ClusterZoneChangeSerializer",
    "InstanceGroupAddSerializer",
    "InstanceGroupSerializer",
    "InstanceGroupUpdateSerializer",
    "StorageAttachSerializer",
    "StorageSerializer",
]
