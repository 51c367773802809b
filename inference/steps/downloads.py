"""Phases of model.download: start the `hf download` Job, then follow its progress in its log.

The Job's name is deterministic (recorded on the download at create), so a retried submit finds the
Job instead of starting a second one. The token (if any) is only ever in a Kubernetes Secret: it is
written by :func:`write_token_secret` before the operation starts and never stored in the database.
"""

from __future__ import annotations

import re

from kubernetes import client as k8s

from clusters.models import StorageKind
from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import apply, get
from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Fail, Wait

from ..manifests import download_dir, download_job, token_secret
from ..models import DownloadStatus, ModelDownload
from ..readers.cluster_api import kube_of

POLL_SECONDS = 5
FETCHING = re.compile(r"Fetching (\d+) files:\s+(\d+)%")
FILE_DONE = re.compile(r"^(\S+): 100%\|.*?([\d.]+)([kMGT]?B)/([\d.]+)([kMGT]?B)", re.M)
UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def _download(ctx: StepContext) -> ModelDownload:
    return ModelDownload.objects.select_related("cluster__team").get(pk=ctx.operation.target_id)


def write_token_secret(download: ModelDownload, token: str) -> None:
    """Keep the Hugging Face token as a Secret in the team's namespace (the Job reads it from there)."""
    apply(kube_of(download.cluster), token_secret(download, token))


def submit(ctx: StepContext):
    download = _download(ctx)
    api = kube_of(download.cluster)
    if get(api, "batch/v1", "Job", download.job_name, download.namespace) is None:
        apply(api, download_job(download))
    ctx.record(job=download.job_name)
    return Done(f"Job {download.namespace}/{download.job_name} started")


def _progress(log: str) -> dict:
    fetching = FETCHING.findall(log)
    files = FILE_DONE.findall(log)
    size = sum(int(float(total) * UNITS.get(unit, 1)) for _, _, _, total, unit in files)
    lines = [line for line in log.strip().splitlines() if line.strip()]
    return {
        "files_total": int(fetching[-1][0]) if fetching else None,
        "percent": int(fetching[-1][1]) if fetching else 0,
        "files_done": len(files),
        "bytes_done": size,
        "last_line": lines[-1][-200:] if lines else "",
    }


def _s3_size(download: ModelDownload) -> int | None:
    storage = download.cluster.storages.filter(kind=StorageKind.S3).first()
    if storage is None:
        return None
    s3 = team_cloud(download.cluster.team, download.cluster.region).client("s3")
    total = 0
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=storage.bucket, Prefix=download_dir(download) + "/"
    ):
        total += sum(o["Size"] for o in page.get("Contents", []))
    return total


def wait(ctx: StepContext):
    download = _download(ctx)
    api = kube_of(download.cluster)
    core = k8s.CoreV1Api(api)
    pods = core.list_namespaced_pod(download.namespace, label_selector=f"job-name={download.job_name}").items
    log = ""
    if pods and pods[0].status.phase != "Pending":
        try:
            log = core.read_namespaced_pod_log(pods[0].metadata.name, download.namespace, tail_lines=200)
        except k8s.ApiException:
            log = ""
    progress = _progress(log)
    ModelDownload.objects.filter(pk=download.pk).update(progress=progress)
    job = k8s.BatchV1Api(api).read_namespaced_job(download.job_name, download.namespace)
    conditions = {c.type: c for c in job.status.conditions or [] if c.status == "True"}
    if "Failed" in conditions:
        error = next((line for line in reversed(log.splitlines()) if "Error" in line), progress["last_line"])
        return Fail(f"The download failed: {error}", hint="Check the id, and give a token for gated repositories.")
    if "Complete" not in conditions:
        return Wait(POLL_SECONDS, f"{progress['percent']}% ({progress['files_done']} files)")
    size = progress["bytes_done"] or None
    if download.target == "s3":
        size = max(size or 0, _s3_size(download) or 0) or None
    ModelDownload.objects.filter(pk=download.pk).update(
        status=DownloadStatus.READY, size_bytes=size, progress={**progress, "percent": 100}
    )
    return Done(f"downloaded to {download.uri}")
