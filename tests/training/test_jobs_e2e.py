"""Each recipe submits a manifest that validates against its CRD and runs to succeeded on the sandbox, with
a real worker following it; logs are collected line by line and the loss shows up in MLflow."""

from __future__ import annotations

import pytest

from tests.support import wait_until
from training.models import Job

from .helpers import upload, wait_for_job

pytestmark = [pytest.mark.worker]


def test_pytorch_job_runs_to_succeeded_with_logs(cluster, admin_api):
    upload(admin_api, cluster, "scripts/train.py", b"print('train')\n")
    body = {
        "name": "fsdp",
        "recipe": "pytorch",
        "instance_group": "gpu",
        "nodes": 2,
        "script": "/s3/scripts/train.py",
        "args": ["--max_steps", "30"],
    }
    answer = admin_api.post(f"/api/v1/clusters/{cluster.pk}/jobs/", body, format="json")
    assert answer.status_code == 202, answer.json()
    job = answer.json()["job"]
    assert job["kind"] == "HyperPodPyTorchJob" and job["gpus"] == 8
    container = job["manifest"]["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}
    done = wait_for_job(admin_api, cluster, job["id"], timeout=90)
    assert done["status"] == "succeeded", done
    logs = admin_api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/logs/?limit=5000").json()
    assert any("Loss:" in line["text"] for line in logs["lines"])
    assert [line["seq"] for line in logs["lines"]] == list(range(1, len(logs["lines"]) + 1))
    assert {line["pod"] for line in logs["lines"]} == {p["name"] for p in done["pods"]}
    # Every line the pods printed, once: the same as reading each pod's whole log now.
    from training.readers.logs import read_pod_log

    for pod in {p["name"] for p in done["pods"]}:
        printed = [text for _, text in read_pod_log(cluster, job["namespace"], pod, None)]
        assert [line["text"] for line in logs["lines"] if line["pod"] == pod] == printed
    metrics = wait_until(
        lambda: (
            (m := admin_api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/metrics/").json())["metrics"].get(
                "loss"
            )
            and m
        ),
        timeout=30,
    )
    assert metrics["metrics"]["loss"][0]["step"] >= 0
    assert Job.objects.get(pk=job["id"]).status == "succeeded"
    # The pods logged to MLflow as the ServiceAccount bound to a role that reaches the tracking server.
    _assert_pods_log_to_mlflow_with_their_own_identity(cluster, job, done)
    # Resubmit: the same request again, validated again, as a new job; the old one and its logs stay.
    again = admin_api.post(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/resubmit/")
    assert again.status_code == 202, again.json()
    second = again.json()["job"]
    assert second["id"] != job["id"] and second["name"] == "fsdp" and second["k8s_name"] != job["k8s_name"]
    assert (
        second["manifest"]["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["command"]
        == (container["command"])
    )
    assert wait_for_job(admin_api, cluster, second["id"], timeout=90)["status"] == "succeeded"
    assert admin_api.get(f"/api/v1/clusters/{cluster.pk}/jobs/").json()["count"] == 2


def test_llama_factory_ms_swift_and_verl_run_to_succeeded(cluster, admin_api):
    upload(admin_api, cluster, "verl/grpo.sh", b"python3 -m verl.trainer.main_ppo trainer.total_training_steps=6\n")
    lmf = (
        "model_name_or_path: Qwen/Qwen3-0.6B\nstage: sft\ndo_train: true\n"
        "dataset: alpaca_en_demo\noutput_dir: /s3/out\n"
    )
    submissions = [
        {"name": "lmf", "recipe": "llama_factory", "config": lmf},
        {"name": "swift", "recipe": "ms_swift", "command": "sft", "args": "--model Qwen/Qwen3-0.6B --max_steps 20"},
        {
            "name": "grpo",
            "recipe": "verl",
            "nodes": 2,
            "entrypoint": "python3 -m verl.trainer.main_ppo trainer.total_training_steps=6",
        },
    ]
    jobs = {}
    for submission in submissions:
        answer = admin_api.post(
            f"/api/v1/clusters/{cluster.pk}/jobs/", {"instance_group": "gpu", **submission}, format="json"
        )
        assert answer.status_code == 202, answer.json()
        jobs[submission["recipe"]] = answer.json()["job"]
    assert jobs["verl"]["kind"] == "RayJob"
    assert jobs["verl"]["manifest"]["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] == 1
    for recipe, job in jobs.items():
        done = wait_for_job(admin_api, cluster, job["id"], timeout=120)
        assert done["status"] == "succeeded", (recipe, done["status_message"], done["events"][-3:])
        lines = admin_api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job['id']}/logs/?limit=5000").json()["lines"]
        assert lines, recipe
        texts = "\n".join(line["text"] for line in lines)
        marker = {"llama_factory": "'loss'", "ms_swift": "'loss'", "verl": "step:"}[recipe]
        assert marker in texts, (recipe, texts[-2000:])


def _assert_pods_log_to_mlflow_with_their_own_identity(cluster, job: dict, done: dict) -> None:
    import json

    from kubernetes import client as k8s

    from instantstart.cloud.aws import team_cloud
    from training.readers.mlflow import tracking_server_arn

    from .helpers import kube

    core = k8s.CoreV1Api(kube(cluster))
    assert (
        job["manifest"]["spec"]["replicaSpecs"][0]["template"]["spec"]["serviceAccountName"] == "instantstart-training"
    )
    pods = [core.read_namespaced_pod(p["name"], job["namespace"]) for p in done["pods"]]
    assert {pod.spec.service_account_name for pod in pods} == {"instantstart-training"}
    account = core.read_namespaced_service_account("instantstart-training", job["namespace"])
    assert account.metadata.labels["app.kubernetes.io/managed-by"] == "instantstart"
    cloud = team_cloud(cluster.team, cluster.region)
    eks = cloud.client("eks")
    (association,) = eks.list_pod_identity_associations(
        clusterName=cluster.eks_cluster_name, namespace=job["namespace"], serviceAccount="instantstart-training"
    )["associations"]
    role_arn = eks.describe_pod_identity_association(
        clusterName=cluster.eks_cluster_name, associationId=association["associationId"]
    )["association"]["roleArn"]
    role = role_arn.rsplit("/", 1)[-1]
    assert role == f"{cluster.resource_prefix}-training-pods"
    iam = cloud.client("iam")
    trust = iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]
    trust = json.loads(trust) if isinstance(trust, str) else trust
    assert trust["Statement"][0]["Principal"] == {"Service": ["pods.eks.amazonaws.com"]}
    assert trust["Statement"][0]["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": cluster.eks_cluster_name,
        "aws:RequestTag/kubernetes-namespace": job["namespace"],
        "aws:RequestTag/kubernetes-service-account": "instantstart-training",
    }
    policy = iam.get_role_policy(RoleName=role, PolicyName="InstantStartTrainingPods")["PolicyDocument"]
    policy = json.loads(policy) if isinstance(policy, str) else policy
    reach = {statement["Sid"]: statement for statement in policy["Statement"]}
    assert reach["TrackingServer"]["Action"] == ["sagemaker-mlflow:*"]
    assert reach["TrackingServer"]["Resource"] == tracking_server_arn(cluster)
