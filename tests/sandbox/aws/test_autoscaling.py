"""HyperPod managed autoscaling end to end: UpdateCluster/CreateCluster turn Karpenter on, the cluster
then serves NodePool / NodeClaim / HyperpodNodeClass, pending pods that need a group's instance type
bring its nodes up (the group's count rises, with events), and idle nodes go back to the group's
minimum. Both halves of the sandbox, driven through boto3 and the official kubernetes client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.sandbox.conftest import autoscaling_role, eks_cluster, hyperpod, kube_client, nodepool_manifest, wait_for

KARPENTER = ("karpenter.sh", "v1")
NODECLASS = ("karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses")
GPU = "ml.g5.8xlarge"


def _cluster(
    account, sandbox, gpu_min: int = 0, groups: list[dict[str, Any]] | None = None
) -> tuple[dict[str, Any], client.ApiClient]:
    """EKS + HyperPod with managed autoscaling InService: a static system group and a GPU group."""
    eks = eks_cluster(account, "ml")
    hyperpod(
        account,
        "hp",
        eks,
        groups=groups
        or [
            {"InstanceGroupName": "system", "InstanceType": "ml.m5.2xlarge", "InstanceCount": 1},
            {"InstanceGroupName": "gpu", "InstanceType": GPU, "InstanceCount": gpu_min, "MinInstanceCount": gpu_min},
        ],
        NodeRecovery="Automatic",
        NodeProvisioningMode="Continuous",
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
        ClusterRole=autoscaling_role(account),
    )
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="hp")["AutoScaling"]["Status"] == "InService")
    api = kube_client(account, eks)
    wait_for(lambda: _served(api), timeout=10)
    return eks, api


def _served(api: client.ApiClient) -> bool:
    try:
        client.CustomObjectsApi(api).list_cluster_custom_object(*KARPENTER, "nodepools")
        return True
    except ApiException:
        return False


def _nodepool(name: str = "gpu-np", nodeclass: str = "gpu-nc", **spec: Any) -> dict[str, Any]:
    pool = nodepool_manifest(name, nodeclass, **spec)
    pool["spec"]["template"]["spec"]["expireAfter"] = "Never"
    return pool


def _apply_pool(api: client.ApiClient, groups: list[str], **spec: Any) -> None:
    custom = client.CustomObjectsApi(api)
    custom.create_cluster_custom_object(
        *NODECLASS[:2],
        NODECLASS[2],
        {
            "apiVersion": "karpenter.sagemaker.amazonaws.com/v1",
            "kind": "HyperpodNodeClass",
            "metadata": {"name": "gpu-nc"},
            "spec": {"instanceGroups": groups},
        },
    )
    custom.create_cluster_custom_object(*KARPENTER, "nodepools", _nodepool(**spec))


def _ready(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions", []))


def _gpu_deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "infer"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "infer", "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"node.kubernetes.io/instance-type": GPU},
                    "containers": [
                        {
                            "name": "vllm",
                            "image": "vllm/vllm-openai:v0.8.5",
                            "resources": {
                                "limits": {"nvidia.com/gpu": "1"},
                                "requests": {"cpu": "4", "memory": "16Gi"},
                            },
                        }
                    ],
                },
            },
        },
    }


def _group(account, name: str = "gpu") -> dict[str, Any]:
    groups = account.sagemaker.describe_cluster(ClusterName="hp")["InstanceGroups"]
    return next(g for g in groups if g["InstanceGroupName"] == name)


def _gpu_nodes(api: client.ApiClient) -> list[Any]:
    nodes = client.CoreV1Api(api).list_node(label_selector="sagemaker.amazonaws.com/instance-group-name=gpu").items
    return [n for n in nodes if not any(t.key == "karpenter.sh/disrupted" for t in n.spec.taints or [])]


def test_pending_gpu_pods_scale_a_group_from_zero_and_idle_brings_it_back(account, sandbox):
    _eks, api = _cluster(account, sandbox)
    custom, core, apps = client.CustomObjectsApi(api), client.CoreV1Api(api), client.AppsV1Api(api)
    assert _group(account)["TargetCount"] == 0
    _apply_pool(api, ["gpu"], limits={"nvidia.com/gpu": 4})
    pool = wait_for(
        lambda: (p := custom.get_cluster_custom_object(*KARPENTER, "nodepools", "gpu-np")) and _ready(p) and p
    )
    assert {c["type"] for c in pool["status"]["conditions"]} >= {"ValidationSucceeded", "NodeClassReady", "Ready"}
    assert _ready(custom.get_cluster_custom_object(*NODECLASS, "gpu-nc"))

    apps.create_namespaced_deployment("default", _gpu_deployment(2))

    def running() -> list[Any]:
        pods = core.list_namespaced_pod("default", label_selector="app=infer").items
        return pods if len(pods) == 2 and all(p.status.phase == "Running" for p in pods) else []

    pods = wait_for(running, timeout=20)
    gpu_nodes = {n.metadata.name for n in _gpu_nodes(api)}
    assert {p.spec.node_name for p in pods} == gpu_nodes and len(gpu_nodes) == 2  # one GPU each
    g = _group(account)
    assert g["TargetCount"] == 2 and g["CurrentCount"] == 2
    events = [e["Description"] for e in account.sagemaker.list_cluster_events(ClusterName="hp")["Events"]]
    assert any("target count raised" in e and "Karpenter" in e for e in events)
    claims = custom.list_cluster_custom_object(*KARPENTER, "nodeclaims")["items"]
    assert sorted(c["status"]["nodeName"] for c in claims) == sorted(gpu_nodes)
    assert all(c["metadata"]["labels"]["karpenter.sh/nodepool"] == "gpu-np" for c in claims)
    node = core.read_node(sorted(gpu_nodes)[0])
    assert node.metadata.labels["karpenter.sh/nodepool"] == "gpu-np"
    pool = custom.get_cluster_custom_object(*KARPENTER, "nodepools", "gpu-np")
    assert pool["status"]["nodes"] == 2 and pool["status"]["resources"]["nvidia.com/gpu"] == "2"

    # idle: the deployment goes away, the nodes stay empty past consolidateAfter and are given back
    apps.delete_namespaced_deployment("infer", "default")
    wait_for(lambda: (x := _group(account))["TargetCount"] == 0 and x["CurrentCount"] == 0, timeout=20)
    wait_for(lambda: not custom.list_cluster_custom_object(*KARPENTER, "nodeclaims")["items"], timeout=10)
    wait_for(lambda: not core.list_node(label_selector="sagemaker.amazonaws.com/instance-group-name=gpu").items)
    assert len(core.list_node().items) == 1  # the system group is not Karpenter's
    nodes = account.sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]
    assert [n["InstanceGroupName"] for n in nodes if n["InstanceStatus"]["Status"] == "Running"] == ["system"]
    events = [e["Description"] for e in account.sagemaker.list_cluster_events(ClusterName="hp")["Events"]]
    assert sum("delete requested" in e and "Karpenter" in e for e in events) == 2


def test_scale_down_stops_at_the_groups_minimum_and_limits_cap_scale_up(account, sandbox):
    _eks, api = _cluster(account, sandbox, gpu_min=1)
    custom, core, apps = client.CustomObjectsApi(api), client.CoreV1Api(api), client.AppsV1Api(api)
    wait_for(lambda: len(_gpu_nodes(api)) == 1)
    _apply_pool(api, ["gpu"], limits={"nvidia.com/gpu": 1})
    wait_for(lambda: _ready(custom.get_cluster_custom_object(*KARPENTER, "nodepools", "gpu-np")))
    apps.create_namespaced_deployment("default", _gpu_deployment(3))

    def pods() -> list[Any]:
        return core.list_namespaced_pod("default", label_selector="app=infer").items

    # the group's own node takes one pod; the pool may add one GPU (its limit), not two
    wait_for(lambda: sum(p.status.phase == "Running" for p in pods()) == 2, timeout=20)
    wait_for(lambda: len(_gpu_nodes(api)) == 2)
    assert _group(account)["TargetCount"] == 2
    stuck = [p for p in pods() if not p.spec.node_name]
    assert len(stuck) == 1

    def refused() -> bool:
        events = core.list_namespaced_event("default", field_selector=f"involvedObject.name={stuck[0].metadata.name}")
        return any(e.reason == "FailedScheduling" and "exceed limits" in e.message for e in events.items)

    wait_for(refused)
    assert _group(account)["TargetCount"] == 2

    apps.delete_namespaced_deployment("infer", "default")
    wait_for(lambda: (g := _group(account))["TargetCount"] == 1 and g["CurrentCount"] == 1, timeout=20)
    wait_for(lambda: len(core.list_node(label_selector="sagemaker.amazonaws.com/instance-group-name=gpu").items) == 1)
    wait_for(lambda: not custom.list_cluster_custom_object(*KARPENTER, "nodeclaims")["items"])


def test_karpenter_crds_only_while_autoscaling_is_in_service(account, sandbox):
    eks = eks_cluster(account, "ml")
    hyperpod(
        account,
        "hp",
        eks,
        groups=[{"InstanceGroupName": "gpu", "InstanceType": GPU, "InstanceCount": 1}],
        NodeProvisioningMode="Continuous",
    )
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService")
    api = kube_client(account, eks)
    custom = client.CustomObjectsApi(api)
    wait_for(lambda: client.CoreV1Api(api).list_node().items)
    with pytest.raises(ApiException) as e:
        custom.create_cluster_custom_object(*KARPENTER, "nodepools", _nodepool())
    assert e.value.status == 404
    assert json.loads(e.value.body)["message"] == "the server could not find the requested resource"

    account.sagemaker.update_cluster(
        ClusterName="hp",
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
        ClusterRole=autoscaling_role(account),
    )
    wait_for(lambda: _served(api))
    _apply_pool(api, ["gpu"])
    account.sagemaker.update_cluster(ClusterName="hp", AutoScaling={"Mode": "Disable"})
    wait_for(lambda: "AutoScaling" not in account.sagemaker.describe_cluster(ClusterName="hp"))
    wait_for(lambda: not _served(api))
    ext = client.ApiextensionsV1Api(api)
    names = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    assert not names & {
        "nodepools.karpenter.sh",
        "nodeclaims.karpenter.sh",
        "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com",
    }
    assert _group(account)["TargetCount"] == 1  # disabling autoscaling leaves the nodes where they are


def test_nodeclass_with_spot_or_unknown_group_is_not_ready(account, sandbox):
    groups = [
        {"InstanceGroupName": "gpu", "InstanceType": GPU, "InstanceCount": 0},
        {"InstanceGroupName": "spot", "InstanceType": GPU, "InstanceCount": 0, "CapacityRequirements": {"Spot": {}}},
    ]
    _eks, api = _cluster(account, sandbox, groups=groups)
    custom = client.CustomObjectsApi(api)
    _apply_pool(api, ["gpu", "spot"])

    def verdict() -> dict[str, Any] | None:
        c = custom.get_cluster_custom_object(*NODECLASS, "gpu-nc")
        return next((x for x in (c.get("status") or {}).get("conditions", []) if x["type"] == "Ready"), None)

    cond = wait_for(verdict)
    assert cond["status"] == "False" and "Spot" in cond["message"]
    pool = wait_for(
        lambda: (p := custom.get_cluster_custom_object(*KARPENTER, "nodepools", "gpu-np")).get("status") and p
    )
    assert not _ready(pool)
    custom.patch_cluster_custom_object(*NODECLASS, "gpu-nc", {"spec": {"instanceGroups": ["missing"]}})
    wait_for(lambda: "missing" in (verdict() or {}).get("message", ""))
    custom.patch_cluster_custom_object(*NODECLASS, "gpu-nc", {"spec": {"instanceGroups": ["gpu"]}})
    wait_for(lambda: (verdict() or {}).get("status") == "True")
    wait_for(lambda: _ready(custom.get_cluster_custom_object(*KARPENTER, "nodepools", "gpu-np")))


def test_autoscaling_and_its_nodes_survive_a_sandbox_restart(tmp_path):
    from sandbox.server import Sandbox
    from tests.sandbox.conftest import Account

    state = tmp_path / "state"
    sb = Sandbox(state, speedup=5000).start()
    try:
        account = Account(sb)
        _eks, api = _cluster(account, sb)
        _apply_pool(api, ["gpu"])
        client.AppsV1Api(api).create_namespaced_deployment("default", _gpu_deployment(1))
        wait_for(lambda: len(_gpu_nodes(api)) == 1, timeout=20)
    finally:
        sb.stop()
    sb = Sandbox(state, speedup=5000).start()
    try:
        again = Account(sb, account_id=account.id)
        assert again.sagemaker.describe_cluster(ClusterName="hp")["AutoScaling"]["Status"] == "InService"
        api = kube_client(again, again.eks.describe_cluster(name="ml")["cluster"])
        custom = client.CustomObjectsApi(api)
        claims = custom.list_cluster_custom_object(*KARPENTER, "nodeclaims")["items"]
        assert len(claims) == 1 and claims[0]["status"]["nodeName"] == _gpu_nodes(api)[0].metadata.name
        client.AppsV1Api(api).delete_namespaced_deployment("infer", "default")  # still Karpenter's to give back
        wait_for(lambda: _group(again)["TargetCount"] == 0, timeout=20)
    finally:
        sb.stop()
