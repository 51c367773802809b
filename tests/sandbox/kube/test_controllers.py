"""The simulated controllers: nodes from sync_nodes, scheduler, Deployments, Services, Jobs,
DaemonSets, StatefulSets, events, and injected pod crashes."""

from __future__ import annotations

from collections.abc import Callable

from .conftest import KEY, Kube, deployment, gpu_node, wait_for


def _gpu_pod(name: str, gpus: int, **extra: object) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/pytorch:24.07-py3",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus), "vpc.amazonaws.com/efa": "4"}},
                }
            ],
            **extra,
        },
    }


def test_sync_nodes_labels_allocatable_and_user_changes(kube: Kube) -> None:
    nodes = kube.core.list_node().items
    assert [n.metadata.name for n in nodes] == ["hyperpod-i-00000000", "hyperpod-i-00000001"]
    n = nodes[0]
    assert n.metadata.labels["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
    assert n.metadata.labels["topology.kubernetes.io/zone"] == "us-west-2a"
    assert n.metadata.labels["sagemaker.amazonaws.com/instance-group-name"] == "gpu-group"
    assert n.metadata.labels["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
    assert n.status.allocatable["nvidia.com/gpu"] == "8" and n.status.capacity["vpc.amazonaws.com/efa"] == "32"
    assert n.status.capacity["cpu"] == "192" and n.status.allocatable["cpu"].endswith("m")
    assert n.spec.provider_id == "aws:///us-west-2a/i-000000"
    assert {c.type: c.status for c in n.status.conditions}["Ready"] == "True"

    # a user's label and taint survive the next sync; a health change cordons and taints
    kube.core.patch_node(
        "hyperpod-i-00000000",
        {
            "metadata": {"labels": {"team": "a"}},
            "spec": {"taints": [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}]},
        },
    )
    kube.world.sync_nodes(
        KEY,
        [
            gpu_node("hyperpod-i-00000000", labels={"sagemaker.amazonaws.com/node-health-status": "Unschedulable"}),
            gpu_node("hyperpod-i-00000002", ready=False),
        ],
    )
    n0 = kube.core.read_node("hyperpod-i-00000000")
    assert n0.metadata.labels["team"] == "a" and n0.spec.unschedulable is True
    keys = {t.key for t in n0.spec.taints}
    assert {"dedicated", "sagemaker.amazonaws.com/node-health-status"} <= keys
    names = [n.metadata.name for n in kube.core.list_node().items]
    assert names == ["hyperpod-i-00000000", "hyperpod-i-00000002"]
    n2 = kube.core.read_node("hyperpod-i-00000002")
    assert {c.type: c.status for c in n2.status.conditions}["Ready"] == "False"
    # recovery uncordons
    kube.world.sync_nodes(KEY, [gpu_node("hyperpod-i-00000000")])
    n0 = kube.core.read_node("hyperpod-i-00000000")
    assert not n0.spec.unschedulable and {t.key for t in n0.spec.taints} == {"dedicated"}


def test_scheduler_fits_gpus_or_reports_unschedulable(kube: Kube) -> None:
    kube.core.create_namespaced_pod("default", _gpu_pod("fits", 8))
    pod = wait_for(lambda: (p := kube.core.read_namespaced_pod("fits", "default")).status.phase == "Running" and p)
    assert pod.spec.node_name.startswith("hyperpod-i-") and pod.status.pod_ip.startswith("10.1.")
    kube.core.create_namespaced_pod("default", _gpu_pod("too-big", 16))

    def unschedulable() -> str | None:
        p = kube.core.read_namespaced_pod("too-big", "default")
        cond = next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)
        return cond.message if cond and cond.reason == "Unschedulable" else None

    msg = wait_for(unschedulable, what="Unschedulable condition")
    assert msg.startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=too-big").items
    assert any(e.reason == "FailedScheduling" and e.type == "Warning" for e in events)
    # nodeSelector that matches nothing
    kube.core.create_namespaced_pod(
        "default", _gpu_pod("nosel", 1, nodeSelector={"node.kubernetes.io/instance-type": "ml.g5.xlarge"})
    )
    wait_for(
        lambda: (
            "didn't match Pod's node affinity/selector"
            in (
                next(
                    (
                        c.message
                        for c in kube.core.read_namespaced_pod("nosel", "default").status.conditions or []
                        if c.type == "PodScheduled"
                    ),
                    "",
                )
                or ""
            )
        )
    )
    # scheduled-pod events in order of the kubelet's work
    reasons = {
        e.reason for e in kube.core.list_namespaced_event("default", field_selector="involvedObject.name=fits").items
    }
    assert {"Scheduled", "Pulling", "Pulled", "Created", "Started"} <= reasons


def test_deployment_ready_and_rollout(kube: Kube) -> None:
    kube.apps.create_namespaced_deployment("default", deployment("web", replicas=3))

    def ready() -> object:
        d = kube.apps.read_namespaced_deployment("web", "default")
        return d.status.ready_replicas == 3 and d.status.available_replicas == 3 and d

    d = wait_for(ready, what="deployment ready")
    conds = {c.type: (c.status, c.reason) for c in d.status.conditions}
    assert conds["Available"] == ("True", "MinimumReplicasAvailable")
    assert conds["Progressing"] == ("True", "NewReplicaSetAvailable")
    assert d.status.observed_generation == d.metadata.generation
    # a template change rolls out a new ReplicaSet and scales the old one to zero
    kube.apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}}
    )

    def rolled() -> bool:
        rss = kube.apps.list_namespaced_replica_set("default", label_selector="app=web").items
        return (
            len(rss) == 2
            and sorted(r.spec.replicas for r in rss) == [0, 3]
            and all(
                p.spec.containers[0].image == "nginx:1.28"
                for p in kube.core.list_namespaced_pod("default", label_selector="app=web").items
                if p.status.phase == "Running"
            )
        )

    wait_for(rolled, what="rollout")


def test_service_load_balancer_hostname(kube: Kube) -> None:
    kube.apps.create_namespaced_deployment("default", deployment("lb"))
    kube.core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "lb"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "lb"}, "ports": [{"port": 80, "targetPort": 80}]},
        },
    )
    svc = kube.core.read_namespaced_service("lb", "default")
    assert svc.spec.ports[0].node_port >= 30000
    host = wait_for(
        lambda: (kube.core.read_namespaced_service("lb", "default").status.load_balancer.ingress or [None])[0],
        what="LB ingress",
    ).hostname
    assert host.endswith(".us-west-2.elb.amazonaws.com") and host.startswith("a")
    ep = wait_for(lambda: kube.core.read_namespaced_endpoints("lb", "default").subsets, what="endpoints")
    assert ep[0].addresses[0].ip.startswith("10.1.")


def test_job_completes_and_backoff(kube: Kube) -> None:
    kube.batch.create_namespaced_job(
        "default",
        {
            "metadata": {"name": "once"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox:1.36", "command": ["echo", "hi"]}],
                    }
                }
            },
        },
    )

    def complete() -> object:
        j = kube.batch.read_namespaced_job("once", "default")
        return any(c.type == "Complete" and c.status == "True" for c in j.status.conditions or []) and j

    job = wait_for(complete, what="job Complete")
    assert job.status.succeeded == 1 and job.status.completion_time
    pods = kube.core.list_namespaced_pod("default", label_selector="job-name=once").items
    assert len(pods) == 1 and pods[0].status.phase == "Succeeded"
    assert "running: echo hi" in kube.core.read_namespaced_pod_log(pods[0].metadata.name, "default")

    kube.batch.create_namespaced_job(
        "default",
        {
            "metadata": {"name": "fails"},
            "spec": {
                "backoffLimit": 1,
                "template": {
                    "metadata": {"annotations": {"sandbox.instantstart.io/exit-code": "2"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]},
                },
            },
        },
    )

    def failed() -> object:
        j = kube.batch.read_namespaced_job("fails", "default")
        return any(c.type == "Failed" and c.reason == "BackoffLimitExceeded" for c in j.status.conditions or []) and j

    job = wait_for(failed, what="job Failed")
    assert job.status.failed == 2


def test_daemonset_and_statefulset(kube: Kube) -> None:
    kube.apps.create_namespaced_daemon_set(
        "default",
        {
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "a", "image": "busybox:1.36"}]},
                },
            },
        },
    )
    wait_for(lambda: kube.apps.read_namespaced_daemon_set("agent", "default").status.number_ready == 2)
    kube.apps.create_namespaced_stateful_set(
        "default",
        {
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "pg:16"}]},
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                    }
                ],
            },
        },
    )
    wait_for(lambda: kube.apps.read_namespaced_stateful_set("db", "default").status.ready_replicas == 2)
    names = sorted(p.metadata.name for p in kube.core.list_namespaced_pod("default", label_selector="app=db").items)
    assert names == ["db-0", "db-1"]
    pvc = kube.core.read_namespaced_persistent_volume_claim("data-db-0", "default")
    assert pvc.status.phase == "Bound"


def test_crashed_container_restarts_in_place_and_keeps_its_previous_log(kube: Kube) -> None:
    """restartPolicy Always: the kubelet restarts the container in the same pod (CrashLoopBackOff
    between later restarts), counts restartCount, records lastState, and `--previous` shows the old log."""
    kube.apps.create_namespaced_deployment("default", deployment("crashy", replicas=1))
    wait_for(lambda: kube.apps.read_namespaced_deployment("crashy", "default").status.ready_replicas == 1)
    crashed = kube.world.inject_pod_crash(KEY, "default", "crashy-", 1)
    assert len(crashed) == 1
    uid = kube.core.read_namespaced_pod(crashed[0], "default").metadata.uid

    def restarted() -> object:
        pod = kube.core.read_namespaced_pod(crashed[0], "default")
        cs = pod.status.container_statuses[0]
        return cs.restart_count == 1 and cs.state.running and pod

    pod = wait_for(restarted, what="container restarted")
    assert pod.metadata.uid == uid and pod.status.phase == "Running"
    last = pod.status.container_statuses[0].last_state.terminated
    assert last.exit_code == 137 and last.reason == "OOMKilled"
    previous = kube.core.read_namespaced_pod_log(crashed[0], "default", previous=True)
    assert "container crashy started" in previous
    assert kube.core.list_namespaced_pod("default", label_selector="app=crashy").items[0].metadata.uid == uid

    # the second crash waits in CrashLoopBackOff (10 s of simulated time) before the next start
    kube.world.inject_pod_crash(KEY, "default", "crashy-", 1)
    backoff = wait_for(
        lambda: (
            (cs := kube.core.read_namespaced_pod(crashed[0], "default").status.container_statuses[0]).state.waiting
            or cs.restart_count == 2
        ),
        what="back-off or restart",
    )
    if backoff is not True:
        assert backoff.reason == "CrashLoopBackOff"
    wait_for(
        lambda: kube.core.read_namespaced_pod(crashed[0], "default").status.container_statuses[0].restart_count == 2
    )
    events = kube.core.list_namespaced_event("default", field_selector=f"involvedObject.name={crashed[0]}").items
    assert "BackOff" in {e.reason for e in events}


def test_addons_install_system_workloads(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(addons={"vpc-cni", "coredns", "kube-proxy"})
    wait_for(lambda: kube.apps.read_namespaced_deployment("coredns", "kube-system").status.ready_replicas == 2)
    wait_for(lambda: kube.apps.read_namespaced_daemon_set("aws-node", "kube-system").status.number_ready == 2)
    kube.world.set_addons(KEY, {"vpc-cni"})
    names = {d.metadata.name for d in kube.apps.list_namespaced_deployment("kube-system").items}
    assert "coredns" not in names
    assert not kube.world.controller_errors


def test_pods_leave_a_not_ready_node(kube: Kube) -> None:
    kube.apps.create_namespaced_deployment("default", deployment("evict"))
    pod = wait_for(
        lambda: next(
            (
                p
                for p in kube.core.list_namespaced_pod("default", label_selector="app=evict").items
                if p.status.phase == "Running"
            ),
            None,
        )
    )
    node = pod.spec.node_name
    kube.world.sync_nodes(
        KEY, [gpu_node(f"hyperpod-i-0000000{i}", ready=f"hyperpod-i-0000000{i}" != node) for i in range(2)]
    )

    def moved() -> bool:
        pods = kube.core.list_namespaced_pod("default", label_selector="app=evict").items
        return len(pods) == 1 and pods[0].spec.node_name != node and pods[0].status.phase == "Running"

    wait_for(moved, what="pod evicted and recreated on the ready node")
    events = kube.core.list_namespaced_event("default", field_selector=f"involvedObject.name={pod.metadata.name}")
    assert "TaintManagerEviction" in {e.reason for e in events.items}
