"""Submissions that cannot work are refused before anything is sent: a bad field or a missing path is a
400 naming it, a cluster without the operator a 409 naming the feature and the tool that enables it."""

from __future__ import annotations

import pytest

from instantstart.operations.models import Operation
from tests.mcp_client import body
from training.models import Job

from .helpers import upload

pytestmark = [pytest.mark.worker]

OK = {"name": "ok-job", "recipe": "pytorch", "instance_group": "gpu", "script": "/s3/scripts/ok.py"}


def test_bad_configs_are_a_400_naming_the_field_and_submit_nothing(cluster, admin_api):
    upload(admin_api, cluster, "scripts/ok.py", b"print(1)\n")
    upload(admin_api, cluster, "configs/no-dataset.yaml", b"model_name_or_path: Qwen/Qwen3-0.6B\nstage: sft\n")
    cases = [
        ({"name": "Bad_Name"}, "name", "lowercase"),
        ({"recipe": "tensorflow"}, "recipe", "One of"),
        ({"instance_group": "cpu"}, "instance_group", "no group"),
        ({"nodes": 3}, "nodes", "has 2 nodes"),
        ({"gpus_per_node": 8}, "gpus_per_node", "4 GPUs per node"),
        ({"script": "/s3/scripts/missing.py"}, "script", "/s3/scripts/missing.py does not exist"),
        ({"script": "/home/me/train.py"}, "script", "not on the shared storage"),
        ({"storage": ["fsx"], "script": "/fsx/train.py"}, "storage", "no attached fsx"),
        ({"env": {"1BAD": "x"}}, "env", "1BAD"),
        ({"hang_detection": [{"name": "Slow", "logPattern": "Loss: .*", "metricThreshold": 1}]}, "hang_detection", ""),
        (
            {"hang_detection": [{"name": "X", "logPattern": "(", "expectedStartCutOffInSeconds": 5}]},
            "hang_detection",
            "",
        ),
        ({"elastic": {"min_replicas": 2, "max_replicas": 1}}, "elastic", "max_replicas"),
        ({"recipe": "llama_factory", "config": "stage: sft\n"}, "config", "model_name_or_path"),
        ({"recipe": "llama_factory", "config": "/s3/configs/no-dataset.yaml"}, "config", "dataset"),
        ({"recipe": "llama_factory", "config": "/s3/configs/absent.yaml"}, "config", "/s3/configs/absent.yaml"),
        ({"recipe": "llama_factory", "config": "a: [1\n"}, "config", "Not valid YAML"),
        ({"recipe": "ms_swift", "command": "train", "args": ["--model", "x"]}, "command", ""),
        ({"recipe": "verl", "entrypoint": "/s3/verl/missing.sh"}, "entrypoint", "does not exist"),
        (
            {"recipe": "verl", "entrypoint": "python3 -m verl.trainer.main_ppo", "worker_replicas": 5},
            "worker_replicas",
            "",
        ),
    ]
    for change, field, message in cases:
        answer = admin_api.post(f"/api/v1/clusters/{cluster.pk}/jobs/", {**OK, **change}, format="json")
        assert answer.status_code == 400, (change, answer.json())
        errors = answer.json()["error"]["fields"] if "error" in answer.json() else answer.json()
        assert field in errors, (change, answer.json())
        assert message in str(errors[field]), (change, errors)
    assert not Job.objects.exists()
    assert not Operation.objects.filter(kind="job.submit").exists()


def test_a_cluster_without_the_operator_is_a_409_naming_the_feature_and_its_tool(
    bare_cluster, outsider_api, other_team
):
    from tests.factories import token
    from tests.mcp_client import MCP

    for recipe, extra, feature in (
        ("pytorch", {"script": "/s3/scripts/ok.py"}, "training_operator"),
        ("verl", {"entrypoint": "python3 -m verl.trainer.main_ppo"}, "kuberay"),
    ):
        if recipe == "pytorch":
            upload(outsider_api, bare_cluster, "scripts/ok.py", b"print(1)\n")
        submit = {"name": "nofeat", "recipe": recipe, "instance_group": "gpu", **extra}
        answer = outsider_api.post(f"/api/v1/clusters/{bare_cluster.pk}/jobs/", submit, format="json")
        assert answer.status_code == 409, answer.json()
        error = answer.json()["error"]
        assert error["code"] == "feature_required"
        assert feature in error["message"] and "update_features" in error["hint"]
    user = other_team.memberships.first().user
    result = MCP(token(other_team, user, "admin")).call("submit_job", {"cluster_id": str(bare_cluster.pk), **submit})
    assert result.is_error and body(result)["error"]["code"] == "feature_required"
    assert not Job.objects.exists()
