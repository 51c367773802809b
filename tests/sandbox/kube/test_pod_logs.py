"""The pod log API as the product reads it to keep every line of every pod: follow streams,
timestamps, sinceTime/sinceSeconds, tailLines, limitBytes, previous; the API server's validation;
`kubectl logs -f`; and a pod the operator recreates starting with an empty log, as in reality."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable

import pytest
from kubernetes.client.exceptions import ApiException

from .conftest import TOKEN, Kube, wait_for
from .jobs import TRAINING, G, P, V, cond, hpjob

LONG = {"sandbox.instantstart.io/run-seconds": "4000"}  # ~4 s of real time at the tests' speed


@pytest.fixture
def training(world_factory: Callable[..., Kube]) -> Kube:
    return world_factory(addons={TRAINING})


def _job(kube: Kube, name: str, **kw: object) -> None:
    kube.custom.create_namespaced_custom_object(G, V, "default", P, hpjob(name, "llama_factory", **kw))


def _running(kube: Kube, pod: str) -> None:
    wait_for(lambda: kube.core.read_namespaced_pod(pod, "default").status.phase == "Running", what=f"{pod} running")


def test_follow_streams_lines_as_they_are_printed_and_ends_with_the_container(training: Kube) -> None:
    kube = training
    _job(kube, "live", annotations=LONG)
    _running(kube, "live-pod-0")
    resp = kube.core.read_namespaced_pod_log("live-pod-0", "default", follow=True, _preload_content=False)
    chunks: list[tuple[float, bytes]] = []
    for chunk in resp.stream(1024):
        chunks.append((time.monotonic(), chunk))
    resp.release_conn()
    streamed = b"".join(c for _, c in chunks).decode()
    # it streamed over the run (not all at the end) and stopped when the container exited
    assert chunks[-1][0] - chunks[0][0] > 1.0
    assert kube.core.read_namespaced_pod("live-pod-0", "default").status.phase == "Succeeded"
    assert streamed == kube.core.read_namespaced_pod_log("live-pod-0", "default")
    assert "***** train metrics *****" in streamed


def test_read_options_select_lines_as_the_api_server_does(training: Kube) -> None:
    kube = training
    _job(kube, "opts")
    wait_for(
        lambda: cond(kube.custom.get_namespaced_custom_object(G, V, "default", P, "opts"), "Succeeded"), timeout=30
    )
    full = kube.core.read_namespaced_pod_log("opts-pod-0", "default").splitlines()
    stamped = kube.core.read_namespaced_pod_log("opts-pod-0", "default", timestamps=True).splitlines()
    assert [line.split(" ", 1)[1] if " " in line else "" for line in stamped] == full
    assert kube.core.read_namespaced_pod_log("opts-pod-0", "default", tail_lines=3).splitlines() == full[-3:]
    assert (
        kube.core.read_namespaced_pod_log("opts-pod-0", "default", container="pytorch", limit_bytes=10)
        == ("\n".join(full) + "\n")[:10]
    )
    middle = stamped[len(stamped) // 2].split(" ", 1)[0]
    code, text = kube.raw(
        "GET", "/api/v1/namespaces/default/pods/opts-pod-0/log", query=[("sinceTime", middle), ("timestamps", "true")]
    )  # the official client has no since_time parameter
    since = str(text).splitlines()
    assert (
        code == 200 and since and all(line.split(" ", 1)[0] >= middle for line in since) and len(since) < len(stamped)
    )
    assert kube.core.read_namespaced_pod_log("opts-pod-0", "default", since_seconds=3600).splitlines() == full


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"sinceSeconds": "0"}, "sinceSeconds", "Invalid value: 0: must be greater than 0"),
        ({"tailLines": "-1"}, "tailLines", "Invalid value: -1: must be greater than or equal to 0"),
        ({"limitBytes": "0"}, "limitBytes", "Invalid value: 0: must be greater than 0"),
    ],
)
def test_bad_log_options_are_422_with_the_field(
    training: Kube, query: dict[str, str], field: str, message: str
) -> None:
    kube = training
    _job(kube, "bad", annotations=LONG)
    _running(kube, "bad-pod-0")
    code, body = kube.raw("GET", "/api/v1/namespaces/default/pods/bad-pod-0/log", query=list(query.items()))
    assert code == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "message": message, "field": field}]
    assert body["message"] == f'PodLogOptions "bad-pod-0" is invalid: {field}: {message}'


def test_log_errors_name_the_problem(training: Kube) -> None:
    kube = training
    _job(kube, "errs", annotations=LONG)
    _running(kube, "errs-pod-0")
    with pytest.raises(ApiException) as e:
        kube.core.read_namespaced_pod_log("errs-pod-0", "default", container="sidecar")
    assert (
        e.value.status == 400
        and json.loads(e.value.body)["message"] == "container sidecar is not valid for pod errs-pod-0"
    )
    with pytest.raises(ApiException) as e:
        kube.core.read_namespaced_pod_log("errs-pod-0", "default", previous=True)
    assert (
        json.loads(e.value.body)["message"] == 'previous terminated container "pytorch" in pod "errs-pod-0" not found'
    )
    code, body = kube.raw(
        "GET",
        "/api/v1/namespaces/default/pods/errs-pod-0/log",
        query=[("sinceSeconds", "10"), ("sinceTime", "2025-01-01T00:00:00Z")],
    )
    assert code == 422 and "at most one of `sinceTime` or `sinceSeconds` may be specified" in body["message"]


def test_kubectl_logs_follow(training: Kube, kubectl_bin: str) -> None:
    kube = training
    _job(kube, "ctl", annotations=LONG)
    _running(kube, "ctl-pod-0")
    res = subprocess.run(
        [kubectl_bin, "--server", kube.url, "--token", TOKEN, "logs", "-f", "ctl-pod-0", "--tail=-1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == kube.core.read_namespaced_pod_log("ctl-pod-0", "default")
    assert "Training completed. Do not forget to share your model on huggingface.co/models =)" in res.stdout


def test_a_pod_the_operator_recreates_starts_with_an_empty_log(training: Kube) -> None:
    kube = training
    _job(kube, "again", annotations={"sandbox.instantstart.io/run-seconds": "60000"}, steps=None, jobMaxRetryCount=2)
    _running(kube, "again-pod-0")
    wait_for(lambda: "{'loss':" in kube.core.read_namespaced_pod_log("again-pod-0", "default"), what="steps")
    old = kube.core.read_namespaced_pod("again-pod-0", "default").metadata.uid
    # a follower of the old pod sees its stream end when the pod goes
    following, stream_done = threading.Event(), threading.Event()

    def follow() -> None:
        resp = kube.core.read_namespaced_pod_log("again-pod-0", "default", follow=True, _preload_content=False)
        for _ in resp.stream(1024):
            following.set()
        stream_done.set()

    threading.Thread(target=follow, daemon=True).start()
    assert following.wait(10)
    kube.world.inject_pod_crash("111122223333/us-west-2/demo", "default", "again-pod-1")
    wait_for(lambda: kube.core.read_namespaced_pod("again-pod-0", "default").metadata.uid != old, what="recreated")
    assert stream_done.wait(10)
    _running(kube, "again-pod-0")
    fresh = kube.core.read_namespaced_pod_log("again-pod-0", "default")
    assert "{'loss':" not in fresh.split("***** Running training *****")[0]  # the old steps are gone
