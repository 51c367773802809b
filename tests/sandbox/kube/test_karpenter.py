"""The Kubernetes half of HyperPod's managed Karpenter on its own: the CRDs' validation, and the
contract with the AWS half (CONTRACT.md) driven by hand: `set_autoscaling` hands over the groups,
`report()["karpenter"]` says how many nodes each group should have and which instances to remove,
and nodes that `sync_nodes` brings bind to their NodeClaims."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.sandbox.conftest import nodepool_manifest

from .conftest import KEY, Kube, gpu_node, wait_for

NP = ("karpenter.sh", "v1", "nodepools")
NC = ("karpenter.sh", "v1", "nodeclaims")
HNC = ("karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses")
GROUP = {
    "instance_type": "ml.p5.48xlarge",
    "zones": ["us-west-2a"],
    "capacity_type": "OnDemand",
    "count": 0,
    "min": 0,
    "labels": {},
    "taints": [],
    "gpus": 8,
    "efa": 32,
    "cpu": 192,
    "memory_gib": 2048,
}


def _pool(**disruption: Any) -> dict[str, Any]:
    pool = nodepool_manifest("gpu", "gpu")
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "60s", **disruption}
    return pool


@pytest.fixture
def karpenter(world_factory: Callable[..., Kube]) -> Kube:
    kube = world_factory(nodes=0)
    kube.world.set_autoscaling(KEY, {"gpu": dict(GROUP)})
    kube.custom.create_cluster_custom_object(
        *HNC[:2],
        HNC[2],
        {
            "apiVersion": "karpenter.sagemaker.amazonaws.com/v1",
            "kind": "HyperpodNodeClass",
            "metadata": {"name": "gpu"},
            "spec": {"instanceGroups": ["gpu"]},
        },
    )
    return kube


def _decided(kube: Kube) -> dict[str, Any]:
    return (kube.world.report(KEY) or {}).get("karpenter") or {}


def test_nodepool_schema_as_hyperpod_serves_it(karpenter: Kube) -> None:
    kube = karpenter
    bad = _pool(consolidationPolicy="WhenIdle")
    bad["spec"]["weight"] = 500
    with pytest.raises(ApiException) as e:
        kube.custom.create_cluster_custom_object(*NP, bad)
    assert e.value.status == 422
    fields = {c["field"] for c in json.loads(e.value.body)["details"]["causes"]}
    assert fields == {"spec.disruption.consolidationPolicy", "spec.weight"}
    # HyperPod's NodePool has no terminationGracePeriod: kubectl (strict field validation) is refused
    strict = _pool()
    strict["spec"]["template"]["spec"]["terminationGracePeriod"] = "1h"
    status, body = kube.raw("POST", "/apis/karpenter.sh/v1/nodepools", strict, query=[("fieldValidation", "Strict")])
    assert status == 400 and 'unknown field "spec.template.spec.terminationGracePeriod"' in body["message"]
    # rules upstream checks with CEL show up in the pool's conditions
    empty_in = _pool()
    empty_in["spec"]["template"]["spec"]["requirements"] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In"}
    ]
    kube.custom.create_cluster_custom_object(*NP, empty_in)

    def validation() -> dict[str, Any] | None:
        pool = kube.custom.get_cluster_custom_object(*NP, "gpu")
        return next(
            (c for c in (pool.get("status") or {}).get("conditions", []) if c["type"] == "ValidationSucceeded"), None
        )

    cond = wait_for(validation)
    assert cond["status"] == "False" and "must have a value defined" in cond["message"]
    defaults = kube.custom.get_cluster_custom_object(*NP, "gpu")["spec"]
    assert defaults["disruption"]["budgets"] == [{"nodes": "10%"}]
    assert defaults["template"]["spec"]["expireAfter"] == "720h"


def test_demand_is_reported_and_nodes_bind_then_empty_nodes_are_given_back(karpenter: Kube) -> None:
    kube = karpenter
    kube.custom.create_cluster_custom_object(*NP, _pool())
    pod = {
        "metadata": {"name": "trainer", "namespace": "default"},
        "spec": {
            "containers": [{"name": "t", "image": "train:1", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "nodeSelector": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
        },
    }
    kube.core.create_namespaced_pod("default", pod)
    decided = wait_for(lambda: _decided(kube).get("desired", {}).get("gpu") == 1 and _decided(kube))
    assert decided["terminate"] == []
    claim = kube.custom.list_cluster_custom_object(*NC)["items"][0]
    assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
    assert claim["spec"]["resources"]["requests"]["nvidia.com/gpu"] == "8"
    assert claim["metadata"]["ownerReferences"][0]["kind"] == "NodePool"
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=trainer").items
    assert any(e.reason == "Nominated" and claim["metadata"]["name"] in e.message for e in events)

    # the AWS half launched it: the node registers, binds to the claim, the pod lands
    node = gpu_node("hyperpod-i-0000000000000aaaa", instance_group="gpu")
    kube.world.sync_nodes(KEY, [node])
    wait_for(lambda: kube.core.read_namespaced_pod("trainer", "default").spec.node_name == node["name"])
    bound = wait_for(
        lambda: (
            (x := kube.custom.get_cluster_custom_object(*NC, claim["metadata"]["name"]))["status"].get("nodeName") and x
        )
    )
    assert bound["status"]["nodeName"] == node["name"] and bound["status"]["providerID"].endswith(node["instance_id"])
    assert kube.core.read_node(node["name"]).metadata.labels["karpenter.sh/nodepool"] == "gpu"
    assert _decided(kube)["desired"] == {"gpu": 1}

    # the pod goes: after consolidateAfter the claim is deleted and the instance is reported for removal
    kube.core.delete_namespaced_pod("trainer", "default")
    decided = wait_for(lambda: _decided(kube)["terminate"] and _decided(kube))
    assert decided["terminate"] == [node["instance_id"]] and decided["desired"] == {"gpu": 0}
    taints = {t.key for t in kube.core.read_node(node["name"]).spec.taints or []}
    assert "karpenter.sh/disrupted" in taints
    kube.world.sync_nodes(KEY, [])  # the AWS half deleted the instance
    wait_for(lambda: not kube.custom.list_cluster_custom_object(*NC)["items"])


def test_autoscaling_off_removes_the_crds_and_their_objects(karpenter: Kube) -> None:
    kube = karpenter
    kube.custom.create_cluster_custom_object(*NP, _pool())
    kube.world.set_autoscaling(KEY, None)
    with pytest.raises(ApiException) as e:
        kube.custom.list_cluster_custom_object(*NP)
    assert e.value.status == 404
    assert kube.world.report(KEY).get("karpenter") is None
    kube.world.set_autoscaling(KEY, {"gpu": dict(GROUP)})
    assert kube.custom.list_cluster_custom_object(*NP)["items"] == []  # nothing came back with the CRDs
