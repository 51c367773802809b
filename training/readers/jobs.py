"""A job as the cluster reports it: the custom object's status, its pods and events, read, never changed.

HyperPodPyTorchJob: the status is its last True condition (as `hyp list hyp-pytorch-job` shows it);
`Restarting` with a `LogStateHanging_*` reason is a detected hang. RayJob: `jobDeploymentStatus`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubernetes import client as k8s

from instantstart.errors import cloud_read

from ..manifests import GROUP_VERSION, JOB_ID_LABEL, PLURAL
from ..models import Job, JobKind, JobStatus
from .cluster import kube

HANG_REASON = "LogStateHanging_"
MAX_EVENTS = 50

_HYPERPOD = {
    "Created": JobStatus.PENDING,
    "PodsRunning": JobStatus.RUNNING,
    "Running": JobStatus.RUNNING,
    "Restarting": JobStatus.RESTARTING,
    "Succeeded": JobStatus.SUCCEEDED,
    "Failed": JobStatus.FAILED,
    "Suspended": JobStatus.PENDING,
}
_RAY = {
    "": JobStatus.PENDING,
    "New": JobStatus.PENDING,
    "Initializing": JobStatus.PENDING,
    "Running": JobStatus.RUNNING,
    "Retrying": JobStatus.RESTARTING,
    "Complete": JobStatus.SUCCEEDED,
    "Failed": JobStatus.FAILED,
    "ValidationFailed": JobStatus.FAILED,
    "Suspending": JobStatus.PENDING,
    "Suspended": JobStatus.PENDING,
}


@dataclass
class JobState:
    """What the cluster says about a job (``exists`` False: the object is gone)."""

    exists: bool
    status: str = JobStatus.PENDING
    message: str = ""
    restarts: int = 0
    hang: bool = False
    pods: list[dict] = field(default_factory=list)
    faulty_nodes: list[str] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    started_at: datetime | None = None
    finished_at: datetime | None = None


def _time(value) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _hyperpod_state(obj: dict) -> JobState:
    status = obj.get("status") or {}
    true = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
    last = true[-1] if true else {}
    state = JobState(
        exists=True,
        status=_HYPERPOD.get(last.get("type", ""), JobStatus.PENDING),
        message=last.get("message") or "",
        restarts=int(status.get("restartCount") or 0),
        started_at=_time(status.get("startTime")),
        finished_at=_time(status.get("completionTime")),
    )
    reason = last.get("reason") or ""
    if state.status == JobStatus.RESTARTING and reason.startswith(HANG_REASON):
        state.status = JobStatus.HUNG
    state.hang = any(
        (c.get("reason") or "").startswith(HANG_REASON) or HANG_REASON in (c.get("message") or "")
        for c in status.get("conditions") or []
    )
    faulty = (status.get("latestFaultyPodInstanceList") or {}).get("faultyInstanceIdList") or []
    state.faulty_nodes = list(faulty)
    return state


def _ray_state(obj: dict) -> JobState:
    status = obj.get("status") or {}
    deployment = status.get("jobDeploymentStatus") or ""
    state = JobState(
        exists=True,
        status=_RAY.get(deployment, JobStatus.PENDING),
        message=status.get("message") or status.get("reason") or "",
        restarts=int(status.get("failed") or 0) if deployment == "Retrying" or status.get("failed") else 0,
        started_at=_time(status.get("startTime")),
        finished_at=_time(status.get("endTime")),
    )
    if state.status in (JobStatus.SUCCEEDED, JobStatus.FAILED) and not state.finished_at:
        state.finished_at = None
    return state


def _pod(pod) -> dict:
    statuses = pod.status.container_statuses or []
    return {
        "name": pod.metadata.name,
        "node": pod.spec.node_name,
        "phase": pod.status.phase or "Pending",
        "restarts": sum(s.restart_count or 0 for s in statuses),
    }


def job_pods(core: k8s.CoreV1Api, job: Job) -> list:
    """The job's pods: those carrying its label, and for a RayJob the submitter Job's pod."""
    found = {
        p.metadata.name: p
        for p in core.list_namespaced_pod(job.namespace, label_selector=f"{JOB_ID_LABEL}={job.pk}").items
    }
    if job.kind == JobKind.RAY:
        for pod in core.list_namespaced_pod(job.namespace, label_selector=f"job-name={job.k8s_name}").items:
            found.setdefault(pod.metadata.name, pod)
    return sorted(found.values(), key=lambda p: p.metadata.name)


@cloud_read()
def read_job(job: Job) -> JobState:
    """The job's state, pods and recent events as the cluster reports them now."""
    api = kube(job.cluster)
    group, version = GROUP_VERSION[job.kind]
    try:
        obj = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            group, version, job.namespace, PLURAL[job.kind], job.k8s_name
        )
    except k8s.ApiException as exc:
        if exc.status == 404:
            return JobState(exists=False)
        raise
    state = _ray_state(obj) if job.kind == JobKind.RAY else _hyperpod_state(obj)
    core = k8s.CoreV1Api(api)
    pods = job_pods(core, job)
    state.pods = [_pod(p) for p in pods]
    names = {job.k8s_name, *(p.metadata.name for p in pods)}
    events = [
        e
        for e in core.list_namespaced_event(job.namespace).items
        if e.involved_object.name in names or (e.involved_object.name or "").startswith(job.k8s_name)
    ]
    events.sort(key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp or datetime.min)
    state.events = [
        {
            "type": e.type,
            "reason": e.reason,
            "object": f"{e.involved_object.kind}/{e.involved_object.name}",
            "message": e.message,
            "count": e.count or 1,
            "at": (e.last_timestamp or e.event_time or e.metadata.creation_timestamp).isoformat()
            if (e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
            else None,
        }
        for e in events[-MAX_EVENTS:]
    ]
    unhealthy = [e.message.rsplit(" ", 1)[-1] for e in events if (e.message or "").startswith("Found unhealthy node")]
    state.faulty_nodes = sorted(set(state.faulty_nodes) | set(unhealthy))
    if any(e.reason and e.reason.startswith(HANG_REASON) for e in events):
        state.hang = True
    return state
