"""The IAM policies against the code: every AWS action the product calls is allowed, nothing more,
each write scoped to what InstantStart creates; a new call fails the check with the command that
regenerates the policies."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deploy import iam_policy
from deploy.iam_actions import CONTROL_PLANE, PRODUCT_PACKAGES, REGENERATE, ROOT, TEAM, discover
from tests.deploy.policies import actions_of, policy_statements

READS = ("Describe", "List", "Get", "Search", "BatchGet")


@pytest.fixture(scope="module")
def walk():
    return discover()


def test_the_walk_resolves_every_aws_call_of_the_product(walk):
    assert walk.problems == []
    found = {(c.identity, c.service, c.operation) for c in walk.calls}
    # A spread of what it must see: direct clients, clients handed to helpers, a getattr table,
    # paginators, and the control plane's own identity assuming the teams' roles.
    assert {
        (TEAM, "ec2", "CreateVpc"),
        (TEAM, "ec2", "DescribeNatGateways"),  # owned_nat_gateways(ec2, ...)
        (TEAM, "s3", "CreateBucket"),  # ensure_bucket(cloud.client("s3"), ...)
        (TEAM, "sagemaker", "BatchRebootClusterNodes"),  # getattr(sagemaker, _CALLS[action])
        (TEAM, "s3", "ListObjectVersions"),  # get_paginator("list_object_versions")
        (TEAM, "service-quotas", "ListServiceQuotas"),
        (CONTROL_PLANE, "sts", "AssumeRole"),
    } <= found
    assert {identity for identity, _, _ in found} == {TEAM, CONTROL_PLANE}


def test_the_templates_allow_exactly_what_the_code_calls(walk):
    check = subprocess.run([sys.executable, "-m", "deploy.iam", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    team = iam_policy.load_template(iam_policy.TEAM_TEMPLATE)
    assert actions_of(policy_statements(team, "ControlPlaneRole", "InstantStartControlPlane")) == (
        iam_policy.required_actions(walk.calls, TEAM)
    )
    management = iam_policy.load_template(iam_policy.MANAGEMENT_TEMPLATE)
    assert (
        actions_of(policy_statements(management, "InstanceRole", "ControlPlane"))
        == (iam_policy.required_actions(walk.calls, CONTROL_PLANE))
        == {"sts:AssumeRole"}
    )


def copy_product(tmp_path: Path) -> Path:
    for package in PRODUCT_PACKAGES:
        if (ROOT / package).is_dir():
            shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tmp_path


def run_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "deploy.iam", "--check", "--root", str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_a_new_aws_call_fails_the_check_and_says_how_to_regenerate(tmp_path):
    root = copy_product(tmp_path)
    (root / "clusters" / "steps" / "keys.py").write_text(
        "from instantstart.cloud.aws import team_cloud\n\n"
        "def _forget(ec2, name):\n"
        "    ec2.delete_key_pair(KeyName=name)\n\n"
        "def run(cluster):\n"
        "    _forget(team_cloud(cluster.team).client('ec2'), cluster.name)\n"
    )
    result = run_check(root)
    assert result.returncode == 1
    assert "deploy/instantstart-role.yaml: lacks ec2:DeleteKeyPair" in result.stderr
    assert f"Regenerate the policies with: {REGENERATE}" in result.stderr


def test_clients_kept_on_an_object_or_made_at_import_are_seen_too(tmp_path):
    root = copy_product(tmp_path)
    (root / "training" / "artifacts.py").write_text(
        "import boto3\n\n"
        "LOGS = boto3.client('logs')\n"
        "LOGS.describe_log_groups()\n\n"
        "class Store:\n"
        "    def __init__(self, cloud):\n"
        "        self.s3 = cloud.client('s3')\n\n"
        "    def put(self, key):\n"
        "        self.s3.get_object(Bucket='is-x', Key=key)\n"
    )
    found = {(c.identity, c.service, c.operation) for c in discover(root).calls}
    assert (TEAM, "s3", "GetObject") in found
    assert (CONTROL_PLANE, "logs", "DescribeLogGroups") in found
    result = run_check(root)
    assert result.returncode == 1 and "logs:DescribeLogGroups run as the instance's own role" in result.stderr


def test_a_call_the_walk_cannot_read_fails_the_check_with_its_place(tmp_path):
    root = copy_product(tmp_path)
    (root / "clusters" / "dynamic.py").write_text(
        "def run(cloud, service):\n    return cloud.client(service).describe_things()\n"
    )
    result = run_check(root)
    assert result.returncode == 1
    assert "clusters/dynamic.py:2: .client() with a service name the walk cannot read" in result.stderr


def test_an_action_of_a_service_without_a_scope_rule_is_refused(tmp_path):
    root = copy_product(tmp_path)
    (root / "inference" / "queues.py").write_text(
        "def run(cloud):\n    cloud.client('sqs').create_queue(QueueName='is-x')\n"
    )
    result = run_check(root)
    assert result.returncode == 1 and "sqs:CreateQueue has no scope" in result.stderr


def test_every_write_is_scoped_to_what_instantstart_creates():
    team = iam_policy.load_template(iam_policy.TEAM_TEMPLATE)
    for statement in policy_statements(team, "ControlPlaneRole", "InstantStartControlPlane"):
        actions = statement["Action"]
        assert all(not a.endswith(":*") and a != "*" for a in actions), statement["Sid"]
        if statement["Resource"] == "*" and "Condition" not in statement:
            names = [a.split(":", 1)[1] for a in actions]
            assert all(n.startswith(READS) for n in names), f"{statement['Sid']} writes on any resource"
            assert statement["Sid"] == "ReadAnything"
    text = iam_policy.TEAM_TEMPLATE.read_text()
    # Each statement says in a comment what it is for (and why, where a wildcard stays).
    for sid in re.findall(r"Sid: (\w+)", text):
        assert re.search(rf"# {sid}: \S", text), sid


def test_the_team_role_attaches_only_the_policies_the_code_names(walk):
    named = set(iam_policy.attachable_policies())
    assert "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy" in named
    team = iam_policy.load_template(iam_policy.TEAM_TEMPLATE)
    attach = next(
        s
        for s in policy_statements(team, "ControlPlaneRole", "InstantStartControlPlane")
        if s["Sid"] == "AttachKnownPolicies"
    )
    allowed = {
        a["Fn::Sub"].replace("${AWS::Partition}", "aws") for a in attach["Condition"]["ArnEquals"]["iam:PolicyARN"]
    }
    assert allowed == named


def test_the_instance_role_allows_exactly_what_its_own_scripts_run():
    management = iam_policy.load_template(iam_policy.MANAGEMENT_TEMPLATE)
    needed = iam_policy.script_actions(iam_policy.instance_scripts(management))
    assert actions_of(policy_statements(management, "InstanceRole", "Instance")) == set(needed)
    # The commands printed in the outputs run on the operator's machine, not on the instance.
    assert "ssm:StartSession" not in needed


def test_the_team_policy_fits_the_iam_size_limit(walk):
    # IAM allows 10,240 characters (whitespace aside) of inline policy per role.
    statements = iam_policy.statements_for(walk.calls)[iam_policy.TEAM_TEMPLATE]
    document = json.dumps({"Version": "2012-10-17", "Statement": [s.document() for s in statements]})
    size = len(re.sub(r"\s", "", document.replace("${AWS::Partition}", "aws").replace("${AWS::AccountId}", "0" * 12)))
    assert size < 10_240, size
