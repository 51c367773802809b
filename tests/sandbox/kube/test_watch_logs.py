"""Watch streams and pod logs, through the official client's watch and log APIs."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from .conftest import KEY, Kube, wait_for


def test_watch_live_events_and_timeout(kube: Kube) -> None:
    kube.core.create_namespaced_config_map("default", {"metadata": {"name": "before", "labels": {"w": "1"}}})
    got: list[tuple[str, str]] = []
    started = threading.Event()

    def consume() -> None:
        w = watch.Watch()
        started.set()
        for ev in w.stream(kube.core.list_namespaced_config_map, "default", label_selector="w=1", timeout_seconds=2):
            got.append((ev["type"], ev["object"].metadata.name))
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    started.wait()
    time.sleep(0.2)
    kube.core.create_namespaced_config_map("default", {"metadata": {"name": "live", "labels": {"w": "1"}}})
    kube.core.create_namespaced_config_map("default", {"metadata": {"name": "other"}})  # filtered out
    kube.core.patch_namespaced_config_map("live", "default", {"data": {"a": "b"}})
    kube.core.delete_namespaced_config_map("live", "default")
    t.join(5)
    assert not t.is_alive()
    assert got == [("ADDED", "before"), ("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "live")]

    # an idle watch ends at timeoutSeconds, and other requests are served meanwhile
    t0 = time.monotonic()
    seen = []

    def idle() -> None:
        for ev in watch.Watch().stream(kube.core.list_namespaced_secret, "default", timeout_seconds=1):
            seen.append(ev)

    t = threading.Thread(target=idle)
    t.start()
    for _ in range(5):
        kube.core.list_namespace()
    t.join(5)
    assert 0.9 < time.monotonic() - t0 < 3 and seen == []


def test_watch_from_resource_version(kube: Kube) -> None:
    lst = kube.core.list_namespaced_config_map("default")
    rv = lst.metadata.resource_version
    kube.core.create_namespaced_config_map("default", {"metadata": {"name": "after1"}})
    kube.core.create_namespaced_config_map("default", {"metadata": {"name": "after2"}})
    events = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            kube.core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    ]
    assert events == [("ADDED", "after1"), ("ADDED", "after2")]
    # raw objects, as controllers using deserialize=False see them
    raw = list(
        watch.Watch().stream(
            kube.core.list_namespaced_config_map,
            "default",
            resource_version=rv,
            timeout_seconds=1,
            field_selector="metadata.name=after2",
        )
    )
    assert [e["object"].metadata.name for e in raw] == ["after2"]
    assert raw[0]["raw_object"]["kind"] == "ConfigMap"


def _run_pod(kube: Kube, name: str, **spec: object) -> None:
    body = {
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "main", "image": "nginx:1.27"}, {"name": "side", "image": "busybox:1.36"}],
            **spec,
        },
    }
    kube.core.create_namespaced_pod("default", body)
    wait_for(lambda: kube.core.read_namespaced_pod(name, "default").status.phase == "Running", what="pod Running")


def test_pod_logs_tail_timestamps_container(kube: Kube) -> None:
    _run_pod(kube, "logger")
    text = kube.core.read_namespaced_pod_log("logger", "default", container="main")
    assert "started" in text and text.endswith("\n")
    lines = text.strip().split("\n")
    assert kube.core.read_namespaced_pod_log("logger", "default", container="main", tail_lines=1).strip() == lines[-1]
    stamped = kube.core.read_namespaced_pod_log("logger", "default", container="main", timestamps=True)
    first = stamped.split("\n")[0]
    assert first.split(" ", 1)[0].endswith("Z") and first.split(" ", 1)[1] == lines[0]
    with pytest.raises(ApiException) as e:
        kube.core.read_namespaced_pod_log("logger", "default", container="nope")
    assert e.value.status == 400
    with pytest.raises(ApiException) as e:  # two containers and none named
        kube.core.read_namespaced_pod_log("logger", "default")
    assert e.value.status == 400


def test_pod_logs_follow_until_exit(kube: Kube) -> None:
    kube.core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "trainer", "annotations": {"sandbox.instantstart.io/run-seconds": "2000"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.36", "command": ["python", "train.py"]}],
            },
        },
    )
    wait_for(lambda: kube.core.read_namespaced_pod("trainer", "default").status.phase == "Running")
    resp = kube.core.read_namespaced_pod_log("trainer", "default", follow=True, _preload_content=False)
    t0 = time.monotonic()
    chunks = []
    for chunk in resp.stream(1024):
        chunks.append(chunk.decode())
    text = "".join(chunks)
    # the stream ended because the container exited (2000 simulated s at 1000x)
    assert time.monotonic() - t0 > 0.5
    assert "running: python train.py" in text and "done" in text
    assert kube.core.read_namespaced_pod("trainer", "default").status.phase == "Succeeded"


def test_a_followed_log_keeps_coming_once_the_log_is_full(kube: Kube) -> None:
    """The kubelet keeps the newest MAX_LOG_LINES of a container; a follower of a full log still gets
    every line written after it began following."""
    from sandbox.kube.store import MAX_LOG_LINES

    _run_pod(kube, "chatty")
    c = kube.world.cluster(KEY)
    pod = kube.core.read_namespaced_pod("chatty", "default")
    as_stored = {"metadata": {"uid": pod.metadata.uid}}
    with c.lock:
        for i in range(MAX_LOG_LINES + 10):
            c.append_log(as_stored, "main", f"old {i}")
    resp = kube.core.read_namespaced_pod_log("chatty", "default", container="main", follow=True, _preload_content=False)
    got = ""
    chunks = resp.stream(1 << 16)
    while f"old {MAX_LOG_LINES + 9}\n" not in got:
        got += next(chunks).decode()
    for i in range(3):
        with c.lock:
            for j in range(20):
                c.append_log(as_stored, "main", f"new {i}.{j}")
        while f"new {i}.19\n" not in got:
            got += next(chunks).decode()
    resp.release_conn()
    assert [x for x in got.splitlines() if x.startswith("new ")] == [
        f"new {i}.{j}" for i in range(3) for j in range(20)
    ]
