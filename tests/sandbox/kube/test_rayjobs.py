"""KubeRay RayJobs: head + workers, a submitter that submits the Ray job and follows its log, VERL's
output in that log, KubeRay's statuses (never stuck Running), retries and cleanup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Kube, wait_for
from .jobs import rayjob

RJ = ("ray.io", "v1", "default", "rayjobs")


@pytest.fixture
def ray(world_factory: Callable[..., Kube]) -> Kube:
    return world_factory(nodes=3, addons={"kuberay-operator"})


def _status(kube: Kube, name: str) -> dict[str, Any]:
    return kube.custom.get_namespaced_custom_object(*RJ, name).get("status") or {}


def _events(kube: Kube, name: str) -> set[str]:
    return {
        e.reason for e in kube.core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
    }


def test_verl_rayjob_runs_on_head_and_workers_and_completes(ray: Kube) -> None:
    kube = ray
    kube.custom.create_namespaced_custom_object(*RJ[:3], "rayjobs", rayjob("grpo", ttlSecondsAfterFinished=900))
    st = wait_for(lambda: (s := _status(kube, "grpo")).get("jobStatus") == "RUNNING" and s, timeout=20, what="RUNNING")
    assert st["jobDeploymentStatus"] == "Running" and st["rayClusterName"].startswith("grpo-")
    assert st["jobId"].startswith("grpo-") and st["dashboardURL"].endswith(".svc.cluster.local:8265")
    pods = kube.core.list_namespaced_pod("default", label_selector=f"ray.io/cluster={st['rayClusterName']}").items
    assert sorted(p.metadata.labels["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]
    head = next(p for p in pods if p.metadata.labels["ray.io/node-type"] == "head")
    assert "Ray runtime started." in kube.core.read_namespaced_pod_log(head.metadata.name, "default")

    st = wait_for(lambda: (s := _status(kube, "grpo")).get("jobDeploymentStatus") == "Complete" and s, timeout=30)
    assert st["jobStatus"] == "SUCCEEDED" and st["message"] == "Job finished successfully." and st["endTime"]
    assert st["succeeded"] == 1 and st["rayJobInfo"]["startTime"]
    submitter = kube.core.list_namespaced_pod("default", label_selector="job-name=grpo").items[0]
    log = kube.core.read_namespaced_pod_log(submitter.metadata.name, "default").splitlines()
    assert any(f"Job '{st['jobId']}' submitted successfully" in line for line in log)
    steps = [line for line in log if " step:" in line and "actor/pg_loss" in line]
    assert len(steps) == 12 and steps[0].startswith("(TaskRunner pid=")
    assert "critic/score/mean:" in steps[0] and "timing_s/step:" in steps[0] and "perf/throughput:" in steps[0]
    assert "Final validation metrics" in log[-1]
    assert {"CreatedRayCluster", "CreatedRayJobSubmitter"} <= _events(kube, "grpo")
    # shutdownAfterJobFinishes: the cluster goes after the TTL; the submitter Job stays for the driver's logs
    wait_for(lambda: not kube.custom.list_namespaced_custom_object("ray.io", "v1", "default", "rayclusters")["items"])
    assert "DeletedRayCluster" in _events(kube, "grpo")
    assert kube.batch.read_namespaced_job("grpo", "default").status.succeeded == 1


def test_the_submitter_keeps_following_a_driver_log_longer_than_the_driver_keeps(
    ray: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The driver keeps only its newest lines: the submitter, which copies them as they come, still
    # gets every step and the end (it used to stop copying once the driver's log was full).
    from sandbox.kube.controllers import ray_driver

    monkeypatch.setattr(ray_driver, "MAX_DRIVER_LINES", 3)
    kube = ray
    kube.custom.create_namespaced_custom_object(*RJ[:3], "rayjobs", rayjob("long"))
    st = wait_for(lambda: (s := _status(kube, "long")).get("jobDeploymentStatus") == "Complete" and s, timeout=30)
    assert st["jobStatus"] == "SUCCEEDED"
    submitter = kube.core.list_namespaced_pod("default", label_selector="job-name=long").items[0]
    log = kube.core.read_namespaced_pod_log(submitter.metadata.name, "default").splitlines()
    assert len([line for line in log if " step:" in line and "actor/pg_loss" in line]) == 12
    assert "Final validation metrics" in log[-1]


def test_a_failing_entrypoint_fails_the_rayjob_instead_of_leaving_it_running(ray: Kube) -> None:
    kube = ray
    manifest = rayjob("broken", annotations={"sandbox.instantstart.io/exit-code": "1"})
    kube.custom.create_namespaced_custom_object(*RJ[:3], "rayjobs", manifest)
    st = wait_for(lambda: (s := _status(kube, "broken")).get("jobDeploymentStatus") == "Failed" and s, timeout=30)
    assert st["jobStatus"] == "FAILED" and st["reason"] == "AppFailed" and st["failed"] == 1
    assert st["message"].startswith("Job entrypoint command failed with exit code 1, last available logs")
    assert "RuntimeError: CUDA error" in st["message"]


def test_backoff_limit_retries_the_rayjob_on_a_new_cluster(ray: Kube) -> None:
    kube = ray
    manifest = rayjob("again", annotations={"sandbox.instantstart.io/exit-code": "1"}, backoffLimit=1)
    kube.custom.create_namespaced_custom_object(*RJ[:3], "rayjobs", manifest)
    first = wait_for(lambda: _status(kube, "again").get("rayClusterName"), what="first cluster")
    st = wait_for(lambda: (s := _status(kube, "again")).get("failed") == 2 and s, timeout=40, what="second failure")
    assert st["jobDeploymentStatus"] == "Failed" and st["rayClusterName"] != first
    assert "DeletedRayJobSubmitter" in _events(kube, "again")


def test_a_hung_driver_stays_running_until_its_deadline(ray: Kube) -> None:
    kube = ray
    manifest = rayjob("frozen", annotations={"sandbox.instantstart.io/run-seconds": "60000"}, activeDeadlineSeconds=900)
    kube.custom.create_namespaced_custom_object(*RJ[:3], "rayjobs", manifest)
    wait_for(lambda: _status(kube, "frozen").get("jobStatus") == "RUNNING", timeout=20)
    assert kube.world.inject_job_hang("111122223333/us-west-2/demo", "default", "frozen") == ["driver of frozen"]
    st = wait_for(lambda: (s := _status(kube, "frozen")).get("jobDeploymentStatus") == "Failed" and s, timeout=30)
    assert st["reason"] == "DeadlineExceeded" and "activeDeadlineSeconds" in st["message"]
