"""The manifest of a job, made from its validated spec: a HyperPodPyTorchJob or a KubeRay RayJob.

Every pod requests (and is limited to) the GPUs and EFA interfaces of its node type, is placed on the
instance group's nodes, and mounts the storage claims at /s3 and /fsx. Sent only after the schema check
(readers/schema.py) passed.
"""

from __future__ import annotations

import json
import shlex

from django.conf import settings

from .models import Job, JobKind, Recipe
from .recipes import MOUNTS, RESTART_POLICY

API_VERSION = {JobKind.HYPERPOD: "sagemaker.amazonaws.com/v1", JobKind.RAY: "ray.io/v1"}
PLURAL = {JobKind.HYPERPOD: "hyperpodpytorchjobs", JobKind.RAY: "rayjobs"}
GROUP_VERSION = {JobKind.HYPERPOD: ("sagemaker.amazonaws.com", "v1"), JobKind.RAY: ("ray.io", "v1")}
JOB_ID_LABEL = "instantstart.io/job-id"
LAUNCHER_PORT = 8080  # the HyperPod elastic agent's server
POD_SERVICE_ACCOUNT = "instantstart-training"  # what a job's pods run as when they log to MLflow


def labels(job: Job) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "instantstart",
        "instantstart.io/team": job.cluster.team.slug,
        JOB_ID_LABEL: str(job.pk),
        "instantstart.io/job-name": job.name,
    }


def _pod_annotations() -> dict[str, str]:
    # Site-wide pod annotations (TRAINING_POD_ANNOTATIONS, JSON), e.g. a mesh's opt-out, or the
    # sandbox's run steering in tests.
    raw = getattr(settings, "TRAINING_POD_ANNOTATIONS", None) or {}
    return json.loads(raw) if isinstance(raw, str) else dict(raw)


def _resources(spec: dict, gpus: int) -> dict:
    amounts = {"nvidia.com/gpu": str(gpus)}
    if spec.get("efa_per_node"):
        amounts["vpc.amazonaws.com/efa"] = str(spec["efa_per_node"])
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _env(job: Job, spec: dict, extra: dict[str, str]) -> list[dict]:
    env = {
        "LOGLEVEL": "INFO",
        "NCCL_DEBUG": "INFO",
        "NCCL_SOCKET_IFNAME": "eth0",
        **({"FI_PROVIDER": "efa"} if spec.get("efa_per_node") else {}),
        **extra,
    }
    if spec.get("mlflow") and spec.get("mlflow_tracking_uri"):
        env.update(
            {
                "MLFLOW_TRACKING_URI": spec["mlflow_tracking_uri"],
                "MLFLOW_EXPERIMENT_NAME": job.k8s_name,
                "MLFLOW_TAG_INSTANCETYPE": spec["instance_type"],
                "MLFLOW_TAG_REPLICAS": str(spec["nodes"]),
                "MLFLOW_TAG_NPROCPERNODE": str(spec["gpus_per_node"]),
            }
        )
    env.update(spec.get("env") or {})
    return [{"name": key, "value": str(value)} for key, value in env.items()]


def _identity(spec: dict) -> dict:
    """The pods of a job that logs to MLflow run as the ServiceAccount its pod identity is bound to
    (steps/identity.py); the others as the namespace's default."""
    return {"serviceAccountName": POD_SERVICE_ACCOUNT} if spec.get("mlflow") and spec.get("mlflow_tracking_uri") else {}


def _volumes(job: Job, spec: dict) -> tuple[list[dict], list[dict]]:
    volumes = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    mounts = [{"name": "shm", "mountPath": "/dev/shm"}]
    for kind, claim in spec["storage"].items():
        name = f"persistent-storage-{kind}"
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": name, "mountPath": MOUNTS[kind]})
    if spec.get("config_inline"):
        volumes.append({"name": "job-config", "configMap": {"name": config_map_name(job)}})
        mounts.append({"name": "job-config", "mountPath": "/opt/instantstart/config", "readOnly": True})
    return volumes, mounts


def config_map_name(job: Job) -> str:
    return f"{job.k8s_name}-config"[:63]


def config_map(job: Job, spec: dict) -> dict | None:
    """The inline config of a job, mounted at /opt/instantstart/config/config.yaml (None without one)."""
    if not spec.get("config_inline"):
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_map_name(job), "namespace": job.namespace, "labels": labels(job)},
        "data": {"config.yaml": spec["config_inline"]},
    }


def _config_path(spec: dict) -> str:
    return spec.get("config_path") or "/opt/instantstart/config/config.yaml"


def _launcher(spec: dict) -> list[str]:
    """hyperpodrun as the original recipe images start it (NNODES etc. are injected by the operator)."""
    return [
        "hyperpodrun",
        f"--nnodes={spec['nodes']}",
        f"--nproc-per-node={spec['gpus_per_node']}",
        "--server-host=0.0.0.0",
        f"--server-port={LAUNCHER_PORT}",
        "--server-log-level=warning",
        "--tee=3",
        "--log_dir=/tmp/hyperpod",
    ]


def _command(spec: dict) -> list[str]:
    recipe = spec["recipe"]
    if recipe == Recipe.PYTORCH:
        if spec["script"].endswith(".sh"):
            return ["bash", spec["script"], *spec.get("args", [])]
        return [*_launcher(spec), spec["script"], *spec.get("args", [])]
    if recipe == Recipe.LLAMA_FACTORY:
        return [*_launcher(spec), "-m", "llamafactory.launcher", _config_path(spec)]
    if recipe == Recipe.MS_SWIFT:
        config = ["--config", _config_path(spec)] if spec.get("config") else []
        return [*_launcher(spec), "-m", f"swift.cli.{spec['command']}", *config, *spec.get("args", [])]
    raise ValueError(recipe)


def hyperpod_job(job: Job, spec: dict) -> dict:
    volumes, mounts = _volumes(job, spec)
    container = {
        "name": "pytorch",
        "image": spec["image"],
        "imagePullPolicy": "Always",
        "command": _command(spec),
        "env": _env(job, spec, {}),
        "ports": [{"containerPort": LAUNCHER_PORT}],
        "resources": _resources(spec, spec["gpus_per_node"]),
        "volumeMounts": mounts,
    }
    template = {
        "metadata": {"labels": labels(job), **({"annotations": a} if (a := _pod_annotations()) else {})},
        "spec": {
            **_identity(spec),
            "nodeSelector": _node_selector(spec),
            "containers": [container],
            "volumes": volumes,
        },
    }
    run_policy: dict = {
        "jobMaxRetryCount": spec["max_retries"],
        "restartPolicy": dict(RESTART_POLICY),
        # Finished pods stay so the collector reads their last lines; running ones go with the job.
        "cleanPodPolicy": "Running",
    }
    if spec["hang_detection"]:
        run_policy["logMonitoringConfiguration"] = [_rule(rule) for rule in spec["hang_detection"]]
    manifest = {
        "apiVersion": API_VERSION[JobKind.HYPERPOD],
        "kind": JobKind.HYPERPOD,
        "metadata": {"name": job.k8s_name, "namespace": job.namespace, "labels": labels(job)},
        "spec": {
            "nprocPerNode": str(spec["gpus_per_node"]),
            "runPolicy": run_policy,
            "replicaSpecs": [{"name": "pods", "replicas": spec["nodes"], "template": template}],
        },
    }
    if spec.get("elastic"):
        manifest["spec"]["elasticPolicy"] = {
            "minReplicas": spec["elastic"]["min_replicas"],
            "maxReplicas": spec["elastic"]["max_replicas"],
        }
    return manifest


def _rule(rule: dict) -> dict:
    out = dict(rule)
    if "metricThreshold" in out:
        out["metricThreshold"] = int(out["metricThreshold"])  # the agent truncates to int as well
    return out


def _node_selector(spec: dict) -> dict:
    return {
        "sagemaker.amazonaws.com/instance-group-name": spec["instance_group"],
        "node.kubernetes.io/instance-type": spec["instance_type"],
    }


def _ray_entrypoint(job: Job, spec: dict) -> str:
    entry = spec["entrypoint"]
    if " " not in entry and entry.endswith(".sh"):
        return f"bash {shlex.quote(entry)}"
    if " " not in entry and entry.endswith(".py"):
        return f"python3 {shlex.quote(entry)}"
    if "verl.trainer.main_" in entry:
        # VERL logs to MLflow only when its logger says so, under its project name: one per job.
        extra = [f"trainer.nnodes={spec['nodes']}", f"trainer.n_gpus_per_node={spec['gpus_per_node']}"]
        if spec.get("mlflow") and "trainer.logger" not in entry:
            extra.append("trainer.logger=['console','mlflow']")
        if "trainer.project_name" not in entry:
            extra.append(f"trainer.project_name={job.k8s_name}")
        return " ".join([entry, *(shlex.quote(e) for e in extra)])
    return entry


def ray_job(job: Job, spec: dict) -> dict:
    volumes, mounts = _volumes(job, spec)
    env = _env(
        job,
        spec,
        {"INSTRT_NUM_NODES": str(spec["nodes"]), "INSTRT_PROC_PER_NODE": str(spec["gpus_per_node"])},
    )
    annotations = _pod_annotations()

    def pod(container_name: str) -> dict:
        return {
            "metadata": {"labels": labels(job), **({"annotations": annotations} if annotations else {})},
            "spec": {
                **_identity(spec),
                "nodeSelector": _node_selector(spec),
                "containers": [
                    {
                        "name": container_name,
                        "image": spec["image"],
                        "env": env,
                        "resources": _resources(spec, spec["gpus_per_node"]),
                        "volumeMounts": mounts,
                    }
                ],
                "volumes": volumes,
            },
        }

    workers = spec["worker_replicas"]
    metadata = {"name": job.k8s_name, "namespace": job.namespace, "labels": labels(job)}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": API_VERSION[JobKind.RAY],
        "kind": JobKind.RAY,
        "metadata": metadata,
        "spec": {
            "entrypoint": _ray_entrypoint(job, spec),
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 3600,
            "backoffLimit": spec["max_retries"],
            "rayClusterSpec": {
                "headGroupSpec": {
                    "rayStartParams": {"dashboard-host": "0.0.0.0", "dashboard-port": "8265"},
                    "template": pod("ray-head"),
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "worker-group",
                        "replicas": workers,
                        "minReplicas": 0,
                        "maxReplicas": max(3, workers + 2),
                        "rayStartParams": {},
                        "template": pod("ray-worker"),
                    }
                ],
            },
        },
    }


def manifest_for(job: Job, spec: dict) -> dict:
    return ray_job(job, spec) if job.kind == JobKind.RAY else hyperpod_job(job, spec)
