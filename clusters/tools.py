"""MCP tools of the clusters app: each one is a clusters REST endpoint (same auth, scoping, errors).

Discovered at startup by agent_tools (see agent_tools/registry.py). A tool declares only what a
person must say: its name, a description written for an agent (what it does, when to call it, its
inputs in decision-level terms, what comes back and what to call next), its MCP annotations and,
when it changes state, its status tool. Method, path parameters, arguments and the answer's schema
are read from the REST route and the view's ``extend_schema``.
"""

from __future__ import annotations

from agent_tools.registry import Tool, register
from instantstart.operations.serializers import STATUS_TOOL

from .api.catalog import CatalogViewSet, PreflightView
from .api.clusters import ClusterViewSet
from .api.groups import InstanceGroupViewSet
from .api.nodes import ClusterDiagnosisViewSet, NodeViewSet
from .api.storage import StorageViewSet

_CLUSTER_SHAPE = (
    "A cluster is {id, name, region, availability_zone, kubernetes_version, storage, status "
    "(creating|active|failed|deleting|imported), managed, eks_cluster_name, hyperpod_cluster_name, vpc_id, "
    "instance_groups [{name, instance_type, count, capacity_type, efa_only, availability_zone, status…}], "
    "storages [{id, name, kind, status…}], nodes (node counts by health and group, as Kubernetes last showed them), "
    "last_operation (the latest "
    "operation on it or its groups, nodes or storage, or null), created_at, updated_at}."
)
_ACCEPTED = (
    "Returns at once (HTTP 202) {cluster, operation}; the operation has id, status and phases. Next: call "
    "get_operation with operation.id every few seconds until its status is succeeded, failed or cancelled."
)
_OPERATION_ACCEPTED = (
    "Returns at once (HTTP 202) the operation {id, kind, status, phases…}. Next: call get_operation with its id "
    "every few seconds until its status is succeeded, failed or cancelled."
)
_STORAGE_SHAPE = (
    "A storage is {id, name, kind (s3|fsx), bucket, file_system_id, namespace, claim_name, status, managed}."
)
_NOT_FOUND = "A cluster id of another team, or of a deleted cluster, is a not_found error."
_REGION = "Input: region (a HyperPod region such as us-west-2; an unknown region is a field error). "

register(
    Tool(
        name="list_clusters",
        title="List clusters",
        description=(
            "List the team's clusters (deleted ones excluded), with their status, instance groups, storage, node "
            "summary and last operation. Call it first to see what exists before creating a cluster or a workload, "
            "or to find a cluster's id by name. Returns {count, next, previous, results: [cluster]}; page with "
            "limit/offset. " + _CLUSTER_SHAPE + " Next: get_cluster for one cluster, set_active_cluster to choose "
            "the cluster workloads default to, create_cluster to add one."
        ),
        view=ClusterViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_cluster",
        title="Get a cluster",
        description=(
            "Get one cluster by id: status, instance groups (type, count, capacity type, zone, status), storage, "
            "node health summary and the last operation with its phases. Use it to check a cluster is active "
            "before running workloads on it, or to see why it failed (last_operation.error). "
            + _CLUSTER_SHAPE
            + " "
            + _NOT_FOUND
            + " Next: get_operation for the last operation's details, "
            "retry_operation when it failed."
        ),
        view=ClusterViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="create_cluster",
        title="Create a cluster",
        description=(
            "Create an EKS + SageMaker HyperPod cluster for the team from decision-level inputs only; networking "
            "(VPC, subnets, NAT, security groups), roles and add-ons are chosen by the control plane. Needs the "
            "admin role. Before calling: list_availability_zones and list_instance_types for the region, "
            "list_training_plans for training-plan capacity, and preflight_cluster with the same arguments to "
            "check quotas. Inputs: name (3-32 lowercase letters, digits, dashes; unique in the team), region, "
            "availability_zone, optional kubernetes_version and storage (s3 default, fsx or none), and "
            "instance_groups: each {name, instance_type (ml.*, an accelerator type offered in the zone), count "
            "(1-1000), capacity_type (on_demand default, spot or training_plan with training_plan_arn), efa_only "
            "(only types with several EFA cards, such as ml.p5.48xlarge), deep_health_checks}. A request that "
            "cannot work is a validation error naming the field, and nothing is created. " + _ACCEPTED + " "
            "Creating a cluster takes tens of minutes. Pass idempotency_key when you may repeat the call: the "
            "repeat returns the same cluster and operation."
        ),
        view=ClusterViewSet,
        action="create",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="delete_cluster",
        title="Delete a cluster",
        description=(
            "Tear a cluster down, with everything InstantStart created for it (HyperPod nodes, EKS, network, "
            "managed storage), in reverse order. Destructive and irreversible: only on the user's explicit "
            "request, and confirm the cluster's name first with get_cluster. Needs the admin role. While another "
            "operation runs on the cluster the call is a conflict error; force=true asks that operation to cancel "
            "and deletes anyway. Deleting a cluster that is already being deleted returns the running deletion. "
            + _NOT_FOUND
            + " "
            + _ACCEPTED
            + " An imported cluster (managed false) is not torn down: InstantStart "
            "only stops managing it, nothing in the cloud changes, and the answer is {forgotten: true, cluster: id} "
            "at once, with no operation."
        ),
        view=ClusterViewSet,
        action="destroy",
        status_tool=STATUS_TOOL,
        destructive=True,
        idempotent=True,  # a repeat answers the deletion already running
    ),
    Tool(
        name="set_active_cluster",
        title="Set the active cluster",
        description=(
            "Make a cluster the caller's active cluster in this team: workload pages and tools that take no "
            "cluster default to it. Any role may do it; it changes only the caller's own preference and starts "
            "no operation (it takes effect at once). Returns the cluster. " + _NOT_FOUND + " Next: the workload "
            "tools, or get_cluster to check the cluster is active."
        ),
        view=ClusterViewSet,
        action="activate",
        status_tool="get_cluster",
        idempotent=True,  # choosing the same cluster again changes nothing
    ),
    Tool(
        name="change_cluster_zone",
        title="Move a failed cluster to another zone",
        description=(
            "Move a cluster whose creation failed (for example for lack of capacity in its zone) to another "
            "availability zone of its region: its instance groups move with it, except training-plan groups, "
            "which stay in their plan's zone. Then call retry_operation on the failed operation: it resumes at "
            "the phase that stopped. Needs the admin role. Inputs: id (the cluster's id), availability_zone "
            "(from list_availability_zones); any other field is a validation error naming it (region, name and "
            "the rest are fixed at create). Explicit diff: the zone the cluster already has changes nothing and "
            "answers the cluster with changed: false. A cluster that has not failed is a conflict error. "
            "Returns the cluster at once (no operation starts). " + _NOT_FOUND + " Next: retry_operation with "
            "the id of the cluster's last_operation."
        ),
        view=ClusterViewSet,
        action="partial_update",
        status_tool="get_cluster",
        idempotent=True,  # explicit diff: the zone it already has changes nothing
    ),
    Tool(
        name="list_availability_zones",
        title="List availability zones",
        description=(
            "List the availability zones of a region in the team's AWS account. Call it before create_cluster to "
            "choose availability_zone. " + _REGION + "availability_zone is not used by this tool. Returns "
            "{results: [{name, zone_id, state}]}. Next: list_instance_types with the chosen zone."
        ),
        view=CatalogViewSet,
        action="availability_zones",
        read_only=True,
    ),
    Tool(
        name="list_instance_types",
        title="List instance types",
        description=(
            "List the accelerator instance types HyperPod offers in a region (optionally only those offered in "
            "one availability_zone), with their GPUs and network facts. Call it before create_cluster to choose "
            "instance_type and whether efa_only is possible. " + _REGION + "Optional availability_zone narrows "
            "the list to that zone. Returns {results: [{instance_type, gpu_model, gpu_count, gpu_memory_gib, "
            "efa_supported, efa_only_allowed, max_efa_interfaces, vcpus, memory_gib, zones}]}. Next: "
            "preflight_cluster to check quotas for the count you want."
        ),
        view=CatalogViewSet,
        action="instance_types",
        read_only=True,
    ),
    Tool(
        name="list_training_plans",
        title="List training plans",
        description=(
            "List the SageMaker training plans (reserved capacity) of the team's account in a region. Call it "
            "before creating an instance group with capacity_type training_plan: use a plan's arn as "
            "training_plan_arn and its instance type; the plan's zone decides the group's zone. "
            + _REGION
            + "availability_zone is not used by this tool. Returns {results: [{arn, name, status, "
            "instance_types, zones, total_instances, available_instances, in_use_instances, start_time, "
            "end_time, target_resources}]}."
        ),
        view=CatalogViewSet,
        action="training_plans",
        read_only=True,
    ),
    Tool(
        name="preflight_cluster",
        title="Preflight a cluster",
        description=(
            "Check whether a cluster request would work, without creating anything: the account role can be "
            "assumed, the name is free, each instance type is offered in the zone, service quotas cover the "
            "counts, training plans match. Read-only. Needs the member role. Takes exactly the arguments of "
            "create_cluster; an invalid request is the same validation error create_cluster gives. Returns "
            "{ok, checks: [{name, ok, message}]}. Next: when ok is true, create_cluster with the same arguments; "
            "otherwise fix what the failing checks' messages name (another zone, type or count)."
        ),
        view=PreflightView,
        read_only=True,
    ),
)

# --- after create: import, storage, drift and reconcile ------------------------------------

register(
    Tool(
        name="list_importable_clusters",
        title="List importable clusters",
        description=(
            "List the EKS clusters of a region in the team's AWS account that InstantStart does not manage yet, "
            "each with its HyperPod cluster if it has one. Read-only. Use it before import_cluster to find the "
            "eks_cluster_name of a cluster made outside InstantStart. " + _REGION + "Returns {results: "
            "[{eks_cluster_name, eks_status, kubernetes_version, vpc_id, hyperpod_cluster_name, hyperpod_status, "
            "instance_groups [{name, instance_type, count}], managed_by_instantstart}]}. Next: import_cluster."
        ),
        view=ClusterViewSet,
        action="importable",
        read_only=True,
    ),
    Tool(
        name="import_cluster",
        title="Import a cluster",
        description=(
            "Adopt an existing EKS cluster (and its HyperPod cluster) of the team's account so that InstantStart "
            "can run workloads on it, without recreating or changing anything in the cloud. Needs the admin "
            "role. Inputs: name (the cluster's name in InstantStart: 3-32 lowercase letters, digits, dashes; "
            "unique in the team), region, eks_cluster_name (from list_importable_clusters). An unknown or "
            "already managed EKS cluster is a validation error naming eks_cluster_name. " + _ACCEPTED + " The "
            "imported cluster has managed false: delete_cluster later only forgets it."
        ),
        view=ClusterViewSet,
        action="import_cluster",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="list_storage",
        title="List a cluster's storage",
        description=(
            "List the shared storage mounted into a cluster: the S3 bucket or FSx file system created with it "
            "and any attached later, each as a volume + claim in the team's namespace. Read-only. Use it to find "
            "the claim_name a workload mounts, or a storage id for detach_storage. Input: cluster_id (the "
            "cluster's id, from list_clusters). Returns {count, next, previous, results: [storage]}. "
            + _STORAGE_SHAPE
            + " "
            + _NOT_FOUND
            + " Next: attach_storage to mount more."
        ),
        view=StorageViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="attach_storage",
        title="Attach storage",
        description=(
            "Mount an existing S3 bucket or FSx for Lustre file system of the team's account into a cluster, as "
            "a volume + claim (named like the storage) in the team's namespace. Nothing is created in AWS. "
            "Needs the admin role. Inputs: cluster_id, name (3-32 lowercase letters, digits, dashes; unique in "
            "the cluster; also the claim name workloads mount), kind (s3 or fsx), bucket for s3 or "
            "file_system_id (fs-…) for fsx. A bucket or file system the account does not have is a validation "
            "error naming the field. Returns at once (HTTP 202) {storage, operation}. "
            + _STORAGE_SHAPE
            + " Next: poll get_operation with operation.id until it is terminal; list_storage then shows the "
            "storage attached. " + _NOT_FOUND
        ),
        view=StorageViewSet,
        action="create",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="detach_storage",
        title="Detach storage",
        description=(
            "Unmount storage from a cluster: its volume and claim are removed; the bucket or file system and "
            "its data stay in the account. Running workloads that mount the claim lose it, so confirm with the "
            "user first. Needs the admin role. Inputs: cluster_id and storage_id (from list_storage). "
            + _OPERATION_ACCEPTED
            + " "
            + _NOT_FOUND
            + " So is a storage id of another cluster."
        ),
        view=StorageViewSet,
        action="destroy",
        status_tool=STATUS_TOOL,
        destructive=True,
    ),
    Tool(
        name="get_cluster_drift",
        title="Get a cluster's drift",
        description=(
            "Compare a cluster's actual state in AWS and Kubernetes with what InstantStart recorded: the EKS "
            "cluster (exists, version, status), the HyperPod cluster and its instance groups (exist, count, "
            "instance type) and the claims of attached storage. Read-only diagnostic: it changes nothing. Only "
            "active and imported clusters are compared; others answer in sync. Use it when workloads fail to "
            "schedule or mount, or a cluster looks different in the AWS console. Input: id (the cluster's id). "
            "Returns {in_sync, differences: [{resource, field, recorded, actual}]}. " + _NOT_FOUND + " Next: "
            "when it is not in sync, suggest reconcile_cluster to the user (it changes state) rather than "
            "repairing anything yourself."
        ),
        view=ClusterViewSet,
        action="drift",
        read_only=True,
    ),
    Tool(
        name="reconcile_cluster",
        title="Reconcile a cluster",
        description=(
            "Record the cluster's actual state and put back what went missing in Kubernetes (manifests, storage "
            "volumes and claims). Use it after get_cluster_drift showed differences and the user agreed to "
            "repair. Needs the admin role. Input: id (the cluster's id). While another operation runs on the "
            "cluster the call is a conflict error. " + _OPERATION_ACCEPTED + " Then call get_cluster_drift "
            "again to confirm the cluster is in sync. " + _NOT_FOUND
        ),
        view=ClusterViewSet,
        action="reconcile",
        status_tool=STATUS_TOOL,
    ),
)

# --- instance groups, nodes and read-only diagnosis ---------------------------------------

_GROUP_SHAPE = (
    "An instance group is {name, instance_type, count, min_count, capacity_type (on_demand|spot|training_plan), "
    "training_plan_arn, efa_only, deep_health_checks, labels, taints, ebs_volume_gb, availability_zone, subnet_id, "
    "status (Creating|InService|Updating|Deleting…)}."
)
_NODE_SHAPE = (
    "A node is {name (the Kubernetes node name), instance_id, instance_group, instance_type, availability_zone, "
    "status (HyperPod's instance status), registered, ready, schedulable, health (Schedulable|Unschedulable|"
    "UnschedulablePendingReplacement|UnschedulablePendingReboot|Unknown|NotRegistered), deep_health_check, "
    "fault_types, fault_reason, allocatable, pods [{namespace, name, phase, restarts, waiting_reason}]}."
)
_GROUP_NOT_FOUND = _NOT_FOUND + " So is a group name the cluster does not have."
_NODE_NOT_FOUND = _NOT_FOUND + " So is a node the cluster does not have."
_NODE_ARGS = (
    "Inputs: cluster_id (the cluster's id) and node (the node's instance id, i-…, or its Kubernetes node name, "
    "hyperpod-i-…, both from list_nodes). "
)
_NO_HYPERPOD = "A cluster without a HyperPod cluster yet (still creating) is a conflict error."
_NOT_READY = (
    "A cluster that is not active, or whose HyperPod cluster is not recorded yet, is a conflict error saying which."
)
_NODE_ACTION = (
    "Needs the admin role. Destructive: only on the user's explicit request, after diagnose_node. "
    + _NODE_ARGS
    + _NOT_READY
    + " "
    + _OPERATION_ACCEPTED
    + " "
    + _NODE_NOT_FOUND
)
_READ_ONLY_DIAGNOSIS = (
    "Read-only diagnostic: it only reads HyperPod and Kubernetes and never acts: it reboots, replaces or deletes "
    "nothing, whatever it finds. "
)

register(
    Tool(
        name="list_instance_groups",
        title="List a cluster's instance groups",
        description=(
            "List the instance groups (HyperPod fleets of one instance type) of a cluster, with their type, count, "
            "capacity type, zone and status. Read-only. Use it to see what capacity a cluster has before adding, "
            "scaling or deleting a group, or to find a group's name. Input: cluster_id (the cluster's id, from "
            "list_clusters). Returns {count, next, previous, results: [instance group]}; page with limit/offset. "
            + _GROUP_SHAPE
            + " "
            + _NOT_FOUND
            + " Next: add_instance_group, scale_instance_group, list_nodes."
        ),
        view=InstanceGroupViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="add_instance_group",
        title="Add an instance group",
        description=(
            "Add an instance group to an active cluster. The control plane places it (a compute subnet in the zone, "
            "created when the zone has none) and asks HyperPod for the capacity, in one operation. Needs the admin "
            "role. Before calling: list_instance_types for the zone (and whether efa_only is allowed), "
            "list_training_plans for training-plan capacity. Inputs: cluster_id; name (letters, digits, dashes; "
            "unique in the cluster); instance_type (ml.*, offered in the zone); count (1-1000) and optional "
            "min_count (at most count); capacity_type (on_demand default, spot, or training_plan with "
            "training_plan_arn); efa_only (only types with several EFA cards, such as ml.p5.48xlarge); optional "
            "availability_zone (default: the cluster's zone), labels and taints for the Kubernetes nodes, "
            "ebs_volume_gb, deep_health_checks. Capacity type and EFA-only cannot change later. A request that "
            "cannot work (a type not offered, efa_only on a type that cannot, a quota too small, a duplicate name) "
            "is a validation error naming the field, and nothing is created. Returns at once (HTTP 202) "
            "{instance_group, operation, notes}: notes lists what the control plane decided differently from the "
            "request, for example a training plan's zone overriding the requested availability_zone; tell the "
            "user. Next: call get_operation with operation.id every few seconds until its status is succeeded, "
            "failed or cancelled; list_nodes then shows the new nodes. A cluster that is not active is a conflict "
            "error. " + _NOT_FOUND
        ),
        view=InstanceGroupViewSet,
        action="create",
        status_tool=STATUS_TOOL,
    ),
    Tool(
        name="scale_instance_group",
        title="Scale an instance group",
        description=(
            "Set an instance group's instance count (and optionally its min_count). Explicit diff: the count "
            "HyperPod actually has is read first; when it already equals the requested count (and min_count is "
            "unchanged) the answer is {changed: false, instance_group} (HTTP 200), no operation starts and there is "
            "nothing to poll. Otherwise it returns at once (HTTP 202) {changed: true, operation}; next, call "
            "get_operation with operation.id every few seconds until its status is succeeded, failed or cancelled. "
            "Needs the admin role. Inputs: cluster_id, name (the group's name, from list_instance_groups), count "
            "(0-1000) and/or min_count (at most count). Only these two can change: capacity type, EFA-only, "
            "instance type, zone and training plan are fixed at create, so to change them add a new group. Any "
            "other argument (capacity_type, efa_only…) is refused exactly as over REST: a validation error naming "
            "it, and nothing changes. Scaling up beyond the account's quota is a validation error naming count. "
            "A cluster that is not active is a conflict error. " + _GROUP_NOT_FOUND
        ),
        view=InstanceGroupViewSet,
        action="partial_update",
        status_tool=STATUS_TOOL,
        idempotent=True,  # explicit diff: the count HyperPod already has starts nothing
    ),
    Tool(
        name="delete_instance_group",
        title="Delete an instance group",
        description=(
            "Remove an instance group and all its nodes from a cluster; the group's compute subnet stays for later "
            "groups in that zone. Destructive: only on the user's explicit request. Needs the admin role. Inputs: "
            "cluster_id, name (the group's name, from list_instance_groups), optional force. While workloads "
            "run on the group's nodes the call is a conflict error naming them; force=true deletes anyway. A "
            "cluster that is not active is a conflict error. " + _OPERATION_ACCEPTED + " " + _GROUP_NOT_FOUND
        ),
        view=InstanceGroupViewSet,
        action="destroy",
        status_tool=STATUS_TOOL,
        destructive=True,
    ),
    Tool(
        name="list_nodes",
        title="List a cluster's nodes",
        description=(
            "List a cluster's nodes as HyperPod and Kubernetes see them: group, instance id, status, HyperPod's "
            "health label, deep health check, faults and the pods on each. Read-only. Use it to check capacity "
            "is healthy, or to find unhealthy nodes (health=Unschedulable and the like). Inputs: cluster_id, "
            "optional health to keep only nodes with that health label. Returns {results: [node]} (not paged; "
            "empty while the cluster has no HyperPod cluster yet). " + _NODE_SHAPE + " " + _NOT_FOUND + " Next: "
            "diagnose_node for a node that is not Schedulable."
        ),
        view=NodeViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="diagnose_node",
        title="Diagnose a node",
        description=(
            _READ_ONLY_DIAGNOSIS + "Investigate one node: HyperPod health and deep health check, registration and "
            "readiness in Kubernetes, allocatable GPUs and EFA interfaces against the instance type, stuck or "
            "restarting pods, and recent HyperPod events. Any role may call it. " + _NODE_ARGS + "Returns {node, "
            "instance_id, healthy, findings [{severity, check, message}], recent_events, suggested_actions "
            "[{action, why, tool}], workloads_on_node}. suggested_actions are in escalation order: investigate "
            "(read the events and pod logs), then reboot (tool reboot_node), then replace (tool replace_node) when "
            "the fault survives a reboot or the deep health check failed. Present them to the user: reboot and "
            "replace change state, so call them only when the user agrees. " + _NODE_NOT_FOUND + " So is any node of a "
            "cluster that has no HyperPod cluster yet."
        ),
        view=NodeViewSet,
        action="diagnosis",
        read_only=True,
    ),
    Tool(
        name="diagnose_cluster",
        title="Diagnose a cluster",
        description=(
            _READ_ONLY_DIAGNOSIS + "Investigate a whole cluster: HyperPod's failure message, groups short of "
            "their target count, and every unhealthy node with its findings and suggested actions. Any role may "
            "call it. Use it first when workloads do not schedule or a cluster looks unhealthy. Input: cluster_id. "
            "Returns {cluster, status, healthy, nodes {total, unhealthy}, findings [{severity, check, message}], "
            "unhealthy_nodes [the report of diagnose_node for each], recent_events}. Each unhealthy node's "
            "suggested_actions escalate investigate → reboot (reboot_node) → replace (replace_node); suggest them "
            "to the user rather than acting. " + _NO_HYPERPOD + " " + _NOT_FOUND + " Next: diagnose_node for one "
            "node's details."
        ),
        view=ClusterDiagnosisViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="reboot_node",
        title="Reboot a node",
        description=(
            "Reboot one node of a cluster through HyperPod; pods on it stop and are rescheduled. The first "
            "remediation step after diagnose_node suggests it; the operation ends when the node is back and "
            "schedulable. " + _NODE_ACTION + " Next, if the fault survives the reboot: diagnose_node again, then "
            "replace_node."
        ),
        view=NodeViewSet,
        action="reboot",
        status_tool=STATUS_TOOL,
        destructive=True,
    ),
    Tool(
        name="replace_node",
        title="Replace a node",
        description=(
            "Replace one node's instance with a new healthy one through HyperPod (the group keeps its count; the "
            "node gets a new instance id, and its local disk is lost). The escalation after a reboot did not help, "
            "or at once when the deep health check failed. " + _NODE_ACTION + " Then list_nodes shows the "
            "replacement."
        ),
        view=NodeViewSet,
        action="replace",
        status_tool=STATUS_TOOL,
        destructive=True,
    ),
    Tool(
        name="delete_node",
        title="Delete a node",
        description=(
            "Remove one node from its instance group through HyperPod: the instance is terminated and the group's "
            "count goes down by one (to shrink a group without choosing the node, use scale_instance_group). Not a "
            "remediation step: to fix a node, reboot_node or replace_node. " + _NODE_ACTION
        ),
        view=NodeViewSet,
        action="delete_node",
        status_tool=STATUS_TOOL,
        destructive=True,
    ),
)

# --- one object by id (issue 12: a tool for every REST capability) --------------------------

register(
    Tool(
        name="get_storage",
        title="Get a storage",
        description=(
            "Get one storage attached to a cluster by id. Read-only. Inputs: cluster_id, storage_id (from "
            "list_storage). " + _STORAGE_SHAPE + " " + _NOT_FOUND
        ),
        view=StorageViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="get_instance_group",
        title="Get an instance group",
        description=(
            "Get one instance group of a cluster by name, with its type, count, capacity type, zone and status. "
            "Read-only. Inputs: cluster_id, name (from list_instance_groups). " + _GROUP_SHAPE + " " + _NOT_FOUND
        ),
        view=InstanceGroupViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="get_node",
        title="Get a node",
        description=(
            "Get one node of a cluster as HyperPod and Kubernetes see it: group, instance id, status, health label, "
            "deep health check, faults and pods. Read-only. Inputs: cluster_id, node (from list_nodes). "
            + _NODE_SHAPE
            + " "
            + _NODE_NOT_FOUND
            + " Next: diagnose_node when it is not Schedulable."
        ),
        view=NodeViewSet,
        action="retrieve",
        read_only=True,
    ),
)
