"""One object the controllers cannot handle stops only itself: the others of its kind, its cluster
and every other cluster go on; the failure is logged once and shown on the object."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.sandbox.kube.conftest import KEY, Kube, deployment, gpu_node, wait_for


def test_a_broken_deployment_stops_only_itself_and_says_so_once(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory()
    c = kube.world.cluster(KEY)
    broken = deployment("broken")
    broken["spec"]["replicas"] = "three"  # what admission refuses today, kept from an older snapshot
    with c.lock:
        rt = c.type_by_gr("apps/deployments")
        obj = c.create(rt, deployment("broken"), "default")
        c.bucket("apps/deployments")[("default", "broken")] = {**obj, "spec": broken["spec"]}

    kube.apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    wait_for(lambda: kube.apps.read_namespaced_deployment("web", "default").status.ready_replicas == 2)
    time.sleep(0.3)  # dozens of ticks, each failing on the broken one
    failures = [e for e in kube.world.controller_errors if "deployment-controller" in e]
    assert len(failures) == 1 and "ValueError" in failures[0]
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=broken").items
    assert [(e.reason, e.type, e.count) for e in events] == [("FailedSync", "Warning", 1)]
    assert "invalid literal for int()" in events[0].message


def test_a_node_the_api_server_refuses_does_not_keep_the_others_out(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(nodes=0)
    bad = gpu_node("hyperpod-i-0000000bad", labels={"bad key!": "v"})
    good = [gpu_node(f"hyperpod-i-00000000{i}") for i in range(2)]
    for _ in range(20):  # the AWS half hands the same list every tick
        kube.world.sync_nodes(KEY, [bad, *good])
    assert sorted(n.metadata.name for n in kube.core.list_node().items) == [g["name"] for g in good]
    refusals = [e for e in kube.world.controller_errors if "hyperpod-i-0000000bad" in e]
    assert len(refusals) == 1  # logged once, not every tick
    assert 'is invalid: metadata.labels: Invalid value: "bad key!"' in refusals[0]
    kube.apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    wait_for(lambda: kube.apps.read_namespaced_deployment("web", "default").status.ready_replicas == 2)
