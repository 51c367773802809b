"""Followed pod logs: a worker that runs a job's running phase also follows each running pod's log
(`follow=true`, what `kubectl logs -f` reads) on a thread of its own, and stores the lines as the
kubelet writes them, instead of up to a poll later. The poll then reads only the pods that have no
connected stream (a pod that finished, a stream that dropped or has been quiet for a second), and every
pod once more before the job shows its end, so the streams make lines come sooner and never decide
what is kept.

Ownership follows the operation: each poll of the running phase renews its job's streams, and a stream
that has not been renewed for TRAINING_LOG_STREAM_IDLE_SECONDS (the operation moved to another worker,
or ended) closes; it also waits at most that long for a line. Two readers of one pod for a while (a
stream and the poll, or the streams of two workers after a lease moved) store each line once
(log_store.py). A stream ends with its container (or the server's limit); the next poll starts another
if the pod still runs.

Each followed job also has a watch on its pods (PodWatch), renewed by the same polls: a pod's stream
starts the moment its container runs (a new pod, a container restarted in place), not at the job's next
poll. Without it every pod's first lines reached the rows up to a poll late (the bench's p99 was the
start of the job). The watch only starts streams; the polls still read whatever no stream covers.

Enabled in worker processes (training/tasks.py, on worker_init): a web server or a test that runs an
operation inline only polls.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time

from django.conf import settings
from django.db import connection
from kubernetes import client as k8s
from kubernetes import watch

from ..manifests import JOB_ID_LABEL
from ..models import Job
from ..readers.cluster import kube
from ..readers.logs import open_pod_log, split_lines
from .log_store import Numberer, since_of, store

log = logging.getLogger(__name__)

_enabled = False
_lock = threading.Lock()
_streams: dict[tuple[str, str], PodStream] = {}
_watches: dict[str, PodWatch] = {}
_writer: Writer | None = None
QUIET_SECONDS = 1.0
WATCH_RETRY_SECONDS = 5.0  # a pod watch that failed is not opened again sooner (the polls go on)


def enable() -> None:
    """Let this process (and processes forked from it) follow pod logs."""
    global _enabled
    _enabled = True


def _idle() -> float:
    return float(getattr(settings, "TRAINING_LOG_STREAM_IDLE_SECONDS", 15.0))


class Writer(threading.Thread):
    """The one thread of a process that stores what its streams read: one database connection however
    many pods are followed, and what several streams read meanwhile goes in one transaction per job."""

    def __init__(self) -> None:
        super().__init__(name="log-stream-writer", daemon=True)
        self.pid = os.getpid()
        self.queue: queue.SimpleQueue[tuple[PodStream, list]] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            batch = [self.queue.get()]
            while True:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            by_job: dict[str, list[tuple[PodStream, list]]] = {}
            for stream, lines in batch:
                by_job.setdefault(str(stream.job_id), []).append((stream, lines))
            for job_id, reads in by_job.items():
                try:
                    store(job_id, [(stream.pod, lines) for stream, lines in reads])
                except Exception as exc:  # noqa: BLE001 - the poll reads from the cursor instead
                    log.warning("could not store the streamed log lines of job %s: %s", job_id, exc)
                    connection.close()
                    for stream, _ in reads:
                        stream.stop()


def _the_writer() -> Writer:
    global _writer
    if _writer is None or _writer.pid != os.getpid() or not _writer.is_alive():
        _writer = Writer()
        _writer.start()
    return _writer


class PodStream(threading.Thread):
    """One pod's followed log, from ``since``, handed to the writer as it comes; one connection, then
    the thread ends."""

    def __init__(self, job, pod: str, since: str | None, writer: Writer) -> None:
        super().__init__(name=f"log-stream-{pod}", daemon=True)
        self.job_id, self.cluster, self.namespace, self.pod = job.pk, job.cluster, job.namespace, pod
        self.since, self.writer = since, writer
        self.pid = os.getpid()
        self.renewed = time.monotonic()
        self.connected = False  # the stream is open and has sent what the pod printed before it opened
        self.last_chunk = 0.0  # when the stream last sent something (monotonic)
        self.stopping = False

    def renewed_lately(self) -> bool:
        return time.monotonic() - self.renewed < _idle()

    def current(self) -> bool:
        return self.pid == os.getpid() and self.is_alive() and not self.stopping and self.renewed_lately()

    def covers(self, now: float) -> bool:
        """Whether the poll may leave this pod to the stream: connected and not quiet for QUIET_SECONDS
        (a stream that stalls without breaking leaves its pod to the poll again within a second)."""
        return self.connected and now - self.last_chunk < QUIET_SECONDS

    def stop(self) -> None:
        self.stopping, self.connected = True, False

    def run(self) -> None:
        try:
            self._follow()
        except Exception as exc:  # noqa: BLE001 - the poll reads what a broken stream did not store
            log.info("log stream of %s/%s ended: %s", self.namespace, self.pod, exc)
        finally:
            self.stop()
            with _lock:
                if _streams.get((str(self.job_id), self.pod)) is self:
                    del _streams[(str(self.job_id), self.pod)]
            connection.close()  # if reaching the cluster read anything from the database on this thread

    def _follow(self) -> None:
        answer = open_pod_log(self.cluster, self.namespace, self.pod, self.since, _idle())
        if answer is None:
            return
        numberer, partial = Numberer(), b""
        try:
            for chunk in answer.stream(1 << 16):
                whole, _, partial = (partial + chunk).rpartition(b"\n")  # a line cut by the chunk waits
                lines = list(numberer.number(split_lines(whole)))
                if lines:
                    self.writer.queue.put((self, lines))
                self.connected, self.last_chunk = not self.stopping, time.monotonic()
                if self.stopping or not self.renewed_lately():
                    return  # no longer renewed: the job's operation is followed elsewhere, or over
        finally:
            self.connected = False
            answer.release_conn()


def _runs(pod) -> bool:
    """Whether the pod's log can be followed: it runs, with a container running."""
    if pod.status is None or pod.status.phase != "Running":
        return False
    return any(s.state and s.state.running for s in pod.status.container_statuses or [])


class PodWatch(threading.Thread):
    """One watch on a job's pods (its label), until the server ends it (after the idle time), that
    starts a pod's stream as soon as its container runs. The job's next poll opens the next one, no
    sooner than a second after this one opened (a server that ends watches at once) or
    WATCH_RETRY_SECONDS after it failed; once the polls stop renewing it, it ends and none follows."""

    def __init__(self, job) -> None:
        super().__init__(name=f"log-watch-{job.k8s_name}", daemon=True)
        self.job = job
        self.pid = os.getpid()
        self.renewed = time.monotonic()
        self.retry_after = self.renewed + 1.0  # when follow_pods may open the next one
        self.stopping = False

    def current(self) -> bool:
        alive = self.pid == os.getpid() and self.is_alive() and not self.stopping
        return alive and time.monotonic() - self.renewed < _idle()

    def replaceable(self, now: float) -> bool:
        ended = self.pid != os.getpid() or not self.is_alive()
        return ended and now >= self.retry_after

    def run(self) -> None:
        try:
            self._watch()
        except Exception as exc:  # noqa: BLE001 - the polls still start the streams
            log.info("the pod watch of job %s ended: %s", self.job.pk, exc)
            self.retry_after = time.monotonic() + WATCH_RETRY_SECONDS
        finally:
            self.stopping = True
            with _lock:  # kept only while it holds the next one back
                if _watches.get(str(self.job.pk)) is self and time.monotonic() >= self.retry_after:
                    del _watches[str(self.job.pk)]
            connection.close()  # the cursors read for the streams it started

    def _watch(self) -> None:
        events = watch.Watch()
        core = k8s.CoreV1Api(kube(self.job.cluster))
        seconds = max(1, int(_idle()))
        for event in events.stream(
            core.list_namespaced_pod,
            self.job.namespace,
            label_selector=f"{JOB_ID_LABEL}={self.job.pk}",
            timeout_seconds=seconds,
            _request_timeout=(10, seconds + 10),
        ):
            if not self.current():
                events.stop()
                return
            pod = event["object"]
            if event["type"] in ("ADDED", "MODIFIED") and _runs(pod):
                self._follow(pod.metadata.name)

    def _follow(self, pod: str) -> None:
        with _lock:
            if (stream := _streams.get((str(self.job.pk), pod))) is not None and stream.current():
                return
        cursors = Job.objects.filter(pk=self.job.pk).values_list("log_cursors", flat=True).first() or {}
        with _lock:
            _stream(self.job, pod, since_of(cursors.get(pod)))


def _stream(job, pod: str, since: str | None) -> PodStream:
    """The current stream of ``job``'s ``pod`` in this process, started from ``since`` when there is
    none (``_lock`` held)."""
    key = (str(job.pk), pod)
    stream = _streams.get(key)
    if stream is None or not stream.current():
        stream = _streams[key] = PodStream(job, pod, since, _the_writer())
        stream.start()
    return stream


def follow_pods(job, pods: list[dict]) -> set[str]:
    """Start or renew the watch on ``job``'s pods and a followed stream for each running pod of it in
    this process (from the pod's cursor as ``job`` holds it); the names of the pods whose stream is
    connected (the poll need not read them)."""
    if not _enabled or not getattr(settings, "TRAINING_LOG_FOLLOW", True):
        return set()
    covered = set()
    now = time.monotonic()
    cursors = job.log_cursors or {}
    with _lock:
        pod_watch = _watches.get(str(job.pk))
        if pod_watch is None or pod_watch.replaceable(now):
            pod_watch = _watches[str(job.pk)] = PodWatch(job)
            pod_watch.start()
        pod_watch.renewed = now
        for pod in pods:
            if pod.get("phase") != "Running":
                continue
            stream = _stream(job, pod["name"], since_of(cursors.get(pod["name"])))
            stream.renewed = now
            if stream.covers(now):
                covered.add(pod["name"])
    return covered
