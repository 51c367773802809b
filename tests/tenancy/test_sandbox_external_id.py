"""A sandbox team's external ID guards its role as in AWS: the role's trust policy demands it, the
control plane sends it, and nobody without it gets in (the confused deputy)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from instantstart.cloud.aws import ROLE_NAME, team_cloud


def assume_without_the_product(sandbox, account: str, external_id: str | None = None) -> dict:
    sts = boto3.client(
        "sts",
        endpoint_url=sandbox.aws_endpoint,
        region_name="us-west-2",
        aws_access_key_id="someone",
        aws_secret_access_key="else",
    )
    kwargs = {"RoleArn": f"arn:aws:iam::{account}:role/{ROLE_NAME}", "RoleSessionName": "confused-deputy"}
    if external_id:
        kwargs["ExternalId"] = external_id
    return sts.assume_role(**kwargs)


def set_external_id(admin_api, value: str, capture) -> None:
    with capture(execute=True):  # the role is redeployed once the settings are committed
        response = admin_api.patch("/api/v1/team/", {"aws_external_id": value}, format="json")
    assert response.status_code == 200 and response.json()["aws_external_id_set"] is bool(value)


def test_the_external_id_a_sandbox_team_sets_guards_its_role(
    admin_api, team, sandbox, django_capture_on_commit_callbacks
):
    account = team.sandbox_account_id
    set_external_id(admin_api, "acme-ext-0001", django_capture_on_commit_callbacks)
    team.refresh_from_db()

    with pytest.raises(ClientError) as refused:
        assume_without_the_product(sandbox, account)
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    assert f"sts:AssumeRole on resource: arn:aws:iam::{account}:role/{ROLE_NAME}" in str(refused.value)
    # the product's own calls carry the team's external ID
    assert team_cloud(team).client("sts").get_caller_identity()["Account"] == account

    # a new external ID in the settings: the old one no longer opens the role, the product goes on
    set_external_id(admin_api, "acme-ext-0002", django_capture_on_commit_callbacks)
    team.refresh_from_db()
    with pytest.raises(ClientError):
        assume_without_the_product(sandbox, account, "acme-ext-0001")
    assert team_cloud(team).client("sts").get_caller_identity()["Account"] == account

    # cleared: the role no longer demands one
    set_external_id(admin_api, "", django_capture_on_commit_callbacks)
    assert assume_without_the_product(sandbox, account)["Credentials"]["AccessKeyId"]
