"""Manifests of training jobs as a user (or the product) writes them: HyperPodPyTorchJobs running each
recipe's real command, and RayJobs running VERL. Shared by the sandbox's training tests."""

from __future__ import annotations

from typing import Any

G, V, P = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"
TRAINING = "amazon-sagemaker-hyperpod-training-operator"
JOB_LABEL = "sagemaker.amazonaws.com/job-name"


def command(recipe: str, steps: int | None = 40) -> list[str]:
    """The recipe's real command line; `steps=None` leaves the step count to the run time."""
    if recipe == "pytorch":
        cmd = [
            "torchrun",
            "--nnodes=2",
            "--nproc-per-node=8",
            "--tee=3",
            "/s3/scripts/train.py",
            "--model_type",
            "llama_v3",
        ]
        return cmd + (["--max_steps", str(steps)] if steps else [])
    if recipe == "llama_factory":
        cmd = ["llamafactory-cli", "train", "/s3/configs/llama3_lora_sft.yaml", "logging_steps=2"]
        return cmd + ([f"max_steps={steps}"] if steps else [])
    cmd = ["swift", "sft", "--model", "Qwen/Qwen2.5-7B-Instruct", "--logging_steps", "2"]
    return cmd + (["--max_steps", str(steps)] if steps else [])


def hpjob(
    name: str,
    recipe: str = "pytorch",
    *,
    replicas: int = 2,
    gpus: int = 8,
    env: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    steps: int | None = 40,
    **run_policy: Any,
) -> dict[str, Any]:
    env_list = [{"name": "LOGLEVEL", "value": "INFO"}, {"name": "NCCL_DEBUG", "value": "INFO"}]
    env_list += [{"name": k, "value": v} for k, v in (env or {}).items()]
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "HyperPodPyTorchJob",
        "metadata": meta,
        "spec": {
            "nprocPerNode": str(gpus),
            "replicaSpecs": [
                {
                    "name": "pod",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "nodeSelector": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "public.ecr.aws/t5u4s6i0/hypd-training-op-torch26-pub:v0110",
                                    "command": command(recipe, steps),
                                    "env": env_list,
                                    "resources": {
                                        "requests": {"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": 32},
                                        "limits": {"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": 32},
                                    },
                                    "volumeMounts": [{"name": "s3", "mountPath": "/s3"}],
                                }
                            ],
                            "volumes": [{"name": "s3", "persistentVolumeClaim": {"claimName": "s3-claim"}}],
                        }
                    },
                }
            ],
            "runPolicy": {"cleanPodPolicy": "None", **run_policy},
        },
    }


VERL_ENTRYPOINT = (
    "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_files=/s3/data/gsm8k/train.parquet "
    "data.train_batch_size=64 actor_rollout_ref.model.path=/s3/Qwen-Qwen3-0.6B actor_rollout_ref.rollout.n=4 "
    "trainer.n_gpus_per_node=8 trainer.nnodes=3 trainer.total_training_steps=12 trainer.test_freq=5 "
    "trainer.logger=['console','mlflow'] trainer.project_name={project} trainer.experiment_name=grpo-qwen3"
)


def rayjob(
    name: str,
    *,
    workers: int = 2,
    entrypoint: str | None = None,
    env: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    def pod(gpus: int) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": "ray",
            "image": "public.ecr.aws/t5u4s6i0/hypd-verl-torch28-pub:v1217a",
            "resources": {"limits": {"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": 32}},
            "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        }
        return {"spec": {"containers": [container]}}

    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": meta,
        "spec": {
            "entrypoint": entrypoint or VERL_ENTRYPOINT.format(project=name),
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 60,
            "rayClusterSpec": {
                "rayVersion": "2.49.0",
                "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"}, "template": pod(8)},
                "workerGroupSpecs": [
                    {
                        "groupName": "worker-group",
                        "replicas": workers,
                        "minReplicas": 0,
                        "maxReplicas": workers + 2,
                        "rayStartParams": {},
                        "template": pod(8),
                    }
                ],
            },
            **spec,
        },
    }


def cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype and c["status"] == "True":
            return c
    return None
