"""The HyperPod training operator and the simulated trainers: each recipe's pods print what the real
program prints, jobs finish, and faults (crashes, unhealthy nodes, hangs found by log monitoring)
restart them within their budget — shown through the official client, as the product sees them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import KEY, Kube, gpu_node, wait_for
from .jobs import JOB_LABEL, TRAINING, G, P, V, cond, hpjob


@pytest.fixture
def training(world_factory: Callable[..., Kube]) -> Kube:
    return world_factory(addons={TRAINING})


def _get(kube: Kube, name: str) -> dict[str, Any]:
    return kube.custom.get_namespaced_custom_object(G, V, "default", P, name)


def _submit(kube: Kube, manifest: dict[str, Any]) -> None:
    kube.custom.create_namespaced_custom_object(G, V, "default", P, manifest)


def _log(kube: Kube, pod: str) -> str:
    return kube.core.read_namespaced_pod_log(pod, "default")


LOSS = {
    "pytorch": re.compile(
        r"\[default0\]:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \[INFO\] __main__: Batch (\d+) Loss: (\d+\.\d+), "
    ),
    "llama_factory": re.compile(
        r"^\{'loss': (\d+\.\d+), 'grad_norm': [\d.e-]+, 'learning_rate': [\d.e-]+, 'epoch': [\d.]+\}$"
    ),
    "ms_swift": re.compile(r"^\{'loss': (\d+\.\d+), 'grad_norm': .*'token_acc': .*'global_step/max_steps': '(\d+)/40'"),
}


@pytest.mark.parametrize("recipe", ["pytorch", "llama_factory", "ms_swift"])
def test_each_recipe_prints_its_program_and_the_job_succeeds(training: Kube, recipe: str) -> None:
    kube = training
    _submit(kube, hpjob("ft", recipe))
    done = wait_for(lambda: cond(_get(kube, "ft"), "Succeeded"), timeout=30, what="Succeeded")
    assert done["reason"] == "JobSucceeded"
    job = _get(kube, "ft")
    types = [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"]
    assert types == ["Created", "Succeeded"]
    assert job["status"]["restartCount"] == 0 and job["status"]["masterAddr"] == "ft-pod-0"
    assert sorted(p["name"] for p in job["status"]["jobPods"]) == ["ft-pod-0", "ft-pod-1"]

    rank0, rank1 = _log(kube, "ft-pod-0").splitlines(), _log(kube, "ft-pod-1").splitlines()
    losses = [
        float(m.group(m.re.groups if recipe == "pytorch" else 1)) for line in rank0 if (m := LOSS[recipe].search(line))
    ]
    assert len(losses) >= 10, "\n".join(rank0[-30:])
    assert losses[-1] < losses[0] * 0.8  # the loss falls
    # every rank initialises NCCL over EFA; only rank 0 prints the training loop
    assert any("NET/OFI Selected provider is efa" in line and "[7]" in line for line in rank1)
    assert not any(LOSS[recipe].search(line) for line in rank1)
    if recipe == "pytorch":
        assert any("Setting OMP_NUM_THREADS environment variable" in line for line in rank0)
        assert any("Rendezvous complete for workers" in line for line in rank0)
        assert "[default] worker group successfully finished" in rank0[-3]
    if recipe == "llama_factory":
        assert any(line.endswith("***** Running training *****") for line in rank0)
        assert any("Total optimization steps = 40" in line for line in rank0)
        assert "***** train metrics *****" in rank0
        assert any("Process rank: 15, world size: 16" in line for line in rank1)
    if recipe == "ms_swift":
        assert any("'global_step/max_steps': '40/40', 'percentage': '100.00%'" in line for line in rank0)
        assert rank0[-1].startswith("[INFO:swift] End time of running main:")
        assert any("[INFO:swift] rank: 8, local_rank: 0, world_size: 16" in line for line in rank1)
    for pod in ("ft-pod-0", "ft-pod-1"):
        status = kube.core.read_namespaced_pod(pod, "default").status
        assert status.phase == "Succeeded" and status.container_statuses[0].state.terminated.exit_code == 0


def test_log_lines_are_stamped_when_the_program_printed_them(training: Kube) -> None:
    kube = training
    _submit(kube, hpjob("stamps", "pytorch"))
    wait_for(lambda: cond(_get(kube, "stamps"), "Succeeded"), timeout=30)
    lines = kube.core.read_namespaced_pod_log("stamps-pod-0", "default", timestamps=True).splitlines()
    stamps = [line.split(" ", 1)[0] for line in lines]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", s) for s in stamps)
    assert stamps == sorted(stamps)
    batches = [line for line in lines if "Batch " in line]
    assert len({line.split(" ", 1)[0] for line in batches}) == len(batches)  # one moment per step


def test_a_crash_restarts_the_whole_job_then_the_budget_runs_out(training: Kube) -> None:
    kube = training
    _submit(
        kube,
        hpjob("fragile", annotations={"sandbox.instantstart.io/run-seconds": "60000"}, steps=None, jobMaxRetryCount=1),
    )
    wait_for(lambda: cond(_get(kube, "fragile"), "Running"), what="Running")
    first_uid = kube.core.read_namespaced_pod("fragile-pod-0", "default").metadata.uid
    assert kube.world.inject_pod_crash(KEY, "default", "fragile-pod-1") == ["fragile-pod-1"]

    def recovered() -> dict[str, Any] | None:
        job = _get(kube, "fragile")
        running = cond(job, "Running")
        return (
            job if job["status"].get("restartCount") == 1 and running and "remediated" in running["message"] else None
        )

    job = wait_for(recovered, what="restart and running again")
    assert re.fullmatch(
        r"The fault of reason PodFailed was remediated in \d+ milliseconds\.", cond(job, "Running")["message"]
    )
    faulty = job["status"]["latestFaultyPodInstanceList"]
    assert faulty["restartType"] == "JLR" and faulty["faultyPodList"] == ["fragile-pod-1"]
    assert faulty["faultyRankList"] == ["1"] and faulty["faultyInstanceIdList"][0].startswith("i-")
    assert job["status"]["restartStatus"] == {"currentEvalPeriod": 0, "fullJobRestartCount": 1, "restartCount": 0}
    assert kube.core.read_namespaced_pod("fragile-pod-0", "default").metadata.uid != first_uid  # JLR: all pods anew
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=fragile").items
    assert {"PodFailed", "Restarting", "Running"} <= {e.reason for e in events}
    assert {e.source.component for e in events} == {"hyperpod-pytorch-job-controller"}

    kube.world.inject_pod_crash(KEY, "default", "fragile-pod-0")
    failed = wait_for(lambda: cond(_get(kube, "fragile"), "Failed"), what="Failed")
    assert failed["reason"] == "MaxRetryCountExceeded" and "jobMaxRetryCount of 1" in failed["message"]
    assert _get(kube, "fragile")["status"]["restartCount"] == 1


def test_process_level_restart_keeps_the_other_pods_and_restarts_their_processes(training: Kube) -> None:
    kube = training
    _submit(
        kube,
        hpjob(
            "plr",
            annotations={"sandbox.instantstart.io/run-seconds": "60000"},
            steps=None,
            jobMaxRetryCount=3,
            restartPolicy={"numRestartBeforeFullJobRestart": 1, "evalPeriodSeconds": 3600, "maxFullJobRestarts": 1},
        ),
    )
    wait_for(lambda: cond(_get(kube, "plr"), "Running"))
    keep = kube.core.read_namespaced_pod("plr-pod-0", "default").metadata.uid
    wait_for(lambda: "Batch 3 Loss" in _log(kube, "plr-pod-0"), what="training steps")
    kube.world.inject_pod_crash(KEY, "default", "plr-pod-1")
    job = wait_for(lambda: (j := _get(kube, "plr"))["status"].get("restartCount") == 1 and cond(j, "Running") and j)
    assert job["status"]["latestFaultyPodInstanceList"]["restartType"] == "PLR"
    assert job["status"]["restartStatus"]["restartCount"] == 1
    assert kube.core.read_namespaced_pod("plr-pod-0", "default").metadata.uid == keep
    # the same pod's log: the launcher restarts its workers, the script starts over
    log = _log(kube, "plr-pod-0")
    assert "Received restart request from the HyperPod training operator" in log
    assert log.count("Creating Model with FSDP2") == 2
    # the next fault is past numRestartBeforeFullJobRestart: a job-level restart
    kube.world.inject_pod_crash(KEY, "default", "plr-pod-0")
    job = wait_for(lambda: (j := _get(kube, "plr"))["status"].get("restartCount") == 2 and cond(j, "Running") and j)
    assert job["status"]["latestFaultyPodInstanceList"]["restartType"] == "JLR"
    assert kube.core.read_namespaced_pod("plr-pod-0", "default").metadata.uid != keep


HANG_RULES = [
    {"name": "JobStart", "logPattern": ".*Batch \\d+ Loss.*", "expectedStartCutOffInSeconds": 120},
    {"name": "JobHang", "logPattern": ".*Batch \\d+ Loss.*", "expectedRecurringFrequencyInSeconds": 60},
]


def test_a_hang_is_found_by_log_monitoring_and_restarted_until_the_budget_is_spent(training: Kube) -> None:
    kube = training
    _submit(
        kube,
        hpjob(
            "stuck",
            annotations={"sandbox.instantstart.io/run-seconds": "60000"},
            steps=None,
            jobMaxRetryCount=1,
            logMonitoringConfiguration=HANG_RULES,
        ),
    )
    wait_for(lambda: "Batch 2 Loss" in _log(kube, "stuck-pod-0"), what="training steps")
    hung = kube.world.inject_job_hang(KEY, "default", "stuck", count=2, after_steps=0)
    assert sorted(hung) == ["stuck-pod-0", "stuck-pod-1"]
    # no new match for 60 s (simulated): the recurring rule fires
    restarting = wait_for(lambda: cond(_get(kube, "stuck"), "Restarting"), what="hang detected")
    assert restarting["reason"] == "LogStateHanging_JobHang"
    job = _get(kube, "stuck")
    assert job["status"]["restartCount"] == 1
    assert sorted(job["status"]["latestFaultyPodInstanceList"]["faultyPodList"]) == ["stuck-pod-0", "stuck-pod-1"]
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=stuck").items
    assert "LogStateHanging_JobHang" in {e.reason for e in events}
    # the second attempt hangs before its first step: JobStart fires, and the budget is spent
    failed = wait_for(lambda: cond(_get(kube, "stuck"), "Failed"), what="Failed")
    assert failed["reason"] == "MaxRetryCountExceeded" and "LogStateHanging_JobStart" in failed["message"]


def test_log_monitoring_goes_on_reading_once_the_log_is_full(training: Kube) -> None:
    """Past MAX_LOG_LINES lines the kubelet drops the oldest; the recurring rule still sees the new
    ones, so a healthy long job is not taken for hung."""
    from sandbox.kube.store import MAX_LOG_LINES

    kube = training
    steps = MAX_LOG_LINES + 1500
    _submit(
        kube,
        hpjob(
            "long",
            annotations={"sandbox.instantstart.io/run-seconds": "6000"},
            steps=steps,
            logMonitoringConfiguration=HANG_RULES,
        ),
    )
    done = wait_for(lambda: cond(_get(kube, "long"), "Succeeded") or cond(_get(kube, "long"), "Restarting"), timeout=60)
    assert done["type"] == "Succeeded", done
    assert _get(kube, "long")["status"]["restartCount"] == 0
    assert f"Batch {steps - 1} Loss" in _log(kube, "long-pod-0")


def test_a_slow_rule_compares_the_captured_metric(training: Kube) -> None:
    kube = training
    slow = {
        "name": "LossTooHigh",
        "logPattern": ".*Batch \\d+ Loss: (\\d+\\.\\d+).*",
        "metricThreshold": 100,
        "operator": "lt",  # always true for these losses: SLOW after 3 data points
        "metricEvaluationDataPoints": 3,
    }
    _submit(kube, hpjob("slowpoke", logMonitoringConfiguration=[slow], jobMaxRetryCount=0))
    failed = wait_for(lambda: cond(_get(kube, "slowpoke"), "Failed"), what="Failed")
    assert "LogStateSlow_LossTooHigh" in failed["message"]
    assert _log(kube, "slowpoke-pod-0").count("Loss:") >= 3


def test_a_stop_pattern_turns_a_rule_off(training: Kube) -> None:
    kube = training
    rule = {  # would fire between any two steps, but the first step's line switches it off
        "name": "Tight",
        "logPattern": ".*Batch \\d+ Loss.*",
        "expectedRecurringFrequencyInSeconds": 0,
        "stopPattern": ".*Batch 0 Loss.*",
    }
    _submit(kube, hpjob("stopper", logMonitoringConfiguration=[rule]))
    wait_for(lambda: cond(_get(kube, "stopper"), "Succeeded"), timeout=30, what="Succeeded")
    assert _get(kube, "stopper")["status"]["restartCount"] == 0


def test_an_unhealthy_node_is_a_node_fault_and_the_job_moves(world_factory: Callable[..., Kube]) -> None:
    kube = world_factory(nodes=3, addons={TRAINING})
    _submit(
        kube,
        hpjob(
            "resilient", annotations={"sandbox.instantstart.io/run-seconds": "60000"}, steps=None, jobMaxRetryCount=2
        ),
    )
    wait_for(lambda: cond(_get(kube, "resilient"), "Running"), what="Running")
    bad_node = kube.core.read_namespaced_pod("resilient-pod-0", "default").spec.node_name
    nodes = [gpu_node(f"hyperpod-i-0000000{i}") for i in range(3)]
    for n in nodes:
        if n["name"] == bad_node:
            n["labels"] = {"sagemaker.amazonaws.com/node-health-status": "UnschedulablePendingReplacement"}
    kube.world.sync_nodes(KEY, nodes)

    def moved() -> bool:
        job = _get(kube, "resilient")
        pods = kube.core.list_namespaced_pod("default", label_selector=f"{JOB_LABEL}=resilient").items
        return (
            job["status"].get("restartCount") == 1
            and cond(job, "Running") is not None
            and all(p.spec.node_name != bad_node and p.status.phase == "Running" for p in pods)
        )

    wait_for(moved, what="job restarted off the unhealthy node")
    faulty = _get(kube, "resilient")["status"]["latestFaultyPodInstanceList"]
    assert faulty["faultyInstanceIdList"] == [f"i-{bad_node[-6:]}"]
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=resilient").items
    node_faults = [e for e in events if e.reason == "NodeFault"]
    assert (
        node_faults
        and node_faults[0].message == f"Found unhealthy node {bad_node}"
        and node_faults[0].type == "Warning"
    )
    assert any(e.reason == "Running" and "The fault of reason NodeFault was remediated" in e.message for e in events)


def test_more_gpus_than_a_node_has_stays_pending_with_the_schedulers_reason(training: Kube) -> None:
    kube = training
    _submit(kube, hpjob("greedy", gpus=16))
    event = wait_for(
        lambda: next(
            (
                e
                for e in kube.core.list_namespaced_event(
                    "default", field_selector="involvedObject.name=greedy-pod-0"
                ).items
                if e.reason == "FailedScheduling"
            ),
            None,
        ),
        what="FailedScheduling",
    )
    assert event.message == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    assert kube.core.read_namespaced_pod("greedy-pod-0", "default").status.phase == "Pending"
    job = _get(kube, "greedy")
    assert [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"] == ["Created"]


def test_finished_jobs_clean_up_per_policy(training: Kube) -> None:
    kube = training
    # 8000 s simulated = 8 s here: the pods go at once, the job after its TTL. A TTL of a few simulated
    # seconds could end before this client's first list of pods had answered (the first takes ~1 s).
    _submit(kube, hpjob("tidy", cleanPodPolicy="All", ttlSecondsAfterFinished=8000))
    wait_for(
        lambda: (
            not kube.core.list_namespaced_pod("default", label_selector=f"{JOB_LABEL}=tidy").items
            and cond(_get(kube, "tidy"), "Succeeded")
        ),
        timeout=30,
        what="pods cleaned up",
    )
    wait_for(
        lambda: (
            not any(
                j["metadata"]["name"] == "tidy"
                for j in kube.custom.list_namespaced_custom_object(G, V, "default", P)["items"]
            )
        ),
        timeout=30,
        what="job deleted after its TTL",
    )


def test_a_program_shorter_than_a_tick_ends_on_every_rank(training: Kube) -> None:
    """At 100 000× the whole program is due in one tick: rank 0 passes the rendezvous and exits in
    the tick that rank 1 first steps in, and rank 1 still runs its steps (it used to wait forever for
    a rank that had already exited)."""
    kube = training
    kube.world.speedup = 100_000
    _submit(kube, hpjob("brief"))
    wait_for(lambda: cond(_get(kube, "brief"), "Succeeded"), timeout=30, what="Succeeded")
    for rank in (0, 1):
        assert kube.core.read_namespaced_pod(f"brief-pod-{rank}", "default").status.phase == "Succeeded", rank
        assert "Done waiting for other agents" in _log(kube, f"brief-pod-{rank}"), rank  # torchrun's exit
    assert LOSS["pytorch"].search(_log(kube, "brief-pod-0"))


def test_a_failing_program_prints_its_error_and_the_job_fails(training: Kube) -> None:
    kube = training
    _submit(kube, hpjob("oom", "llama_factory", annotations={"sandbox.instantstart.io/exit-code": "1"}))
    failed = wait_for(lambda: cond(_get(kube, "oom"), "Failed"), timeout=30, what="Failed")
    assert failed["reason"] == "MaxRetryCountExceeded"
    log = _log(kube, "oom-pod-0")
    assert "torch.OutOfMemoryError: CUDA out of memory." in log
    assert "torch.distributed.elastic.multiprocessing.errors.ChildFailedError" not in log  # no torchrun here
    pod = kube.core.read_namespaced_pod("oom-pod-0", "default")
    assert pod.status.phase == "Failed" and pod.status.container_statuses[0].state.terminated.exit_code == 1


def test_ranks_wait_for_each_other_at_the_rendezvous_and_all_fail_together(world_factory: Callable[..., Kube]) -> None:
    """One node free for a two-node job: rank 0 starts alone and waits at the rendezvous (no step
    before rank 1 runs); the program's error then hits both ranks at the same step, so rank 0 prints
    it before the operator fails the job."""
    kube = world_factory(addons={TRAINING}, nodes=1)
    _submit(kube, hpjob("late", "llama_factory", annotations={"sandbox.instantstart.io/exit-code": "1"}))
    wait_for(lambda: "Initializing" in _log(kube, "late-pod-0"), timeout=20, what="rank 0 started")
    pending = kube.core.read_namespaced_pod("late-pod-1", "default")
    assert pending.status.phase == "Pending"
    time.sleep(1.0)  # rank 0 would be training by now if it did not wait
    assert not any(LOSS["llama_factory"].search(x) for x in _log(kube, "late-pod-0").splitlines()), "stepped alone"
    kube.world.sync_nodes(KEY, [gpu_node(f"hyperpod-i-0000000{i}") for i in range(2)])

    failed = wait_for(lambda: cond(_get(kube, "late"), "Failed"), timeout=30, what="Failed")
    assert failed["reason"] == "MaxRetryCountExceeded"
    assert "torch.OutOfMemoryError: CUDA out of memory." in _log(kube, "late-pod-0")
    started = kube.core.read_namespaced_pod("late-pod-1", "default").status.container_statuses[0]
    first_step = next(
        line.split(" ", 1)[0]
        for line in kube.core.read_namespaced_pod_log("late-pod-0", "default", timestamps=True).splitlines()
        if LOSS["llama_factory"].search(line.split(" ", 1)[1])
    )
    assert first_step >= started.state.terminated.started_at.strftime("%Y-%m-%dT%H:%M:%S")
