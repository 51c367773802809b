"""sts:AssumeRole decided by the role's trust policy, as AWS decides it: the external ID a team's
role demands, roles that do not exist, principals the policy does not name."""

from __future__ import annotations

import json
import urllib.request

import pytest
from botocore.exceptions import ClientError

from tests.sandbox.conftest import REGION, Account, _session, new_account

CONTROL_PLANE = "InstantStartControlPlane"


def sts(sb):
    return _session().client(
        "sts",
        endpoint_url=sb.aws_endpoint,
        aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
        aws_secret_access_key="secret",
        region_name=REGION,
    )


def assume(sb, account: str, external_id: str | None = None, role: str = CONTROL_PLANE) -> dict:
    kwargs = {"RoleArn": f"arn:aws:iam::{account}:role/{role}", "RoleSessionName": "tests"}
    if external_id is not None:
        kwargs["ExternalId"] = external_id
    return sts(sb).assume_role(**kwargs)


def deploy(sb, account: str, external_id: str | None) -> None:
    """What the platform engineer does: deploy deploy/instantstart-role.yaml with ExternalId."""
    request = urllib.request.Request(
        f"{sb.aws_endpoint}/_sandbox/accounts/{account}/control-plane-role",
        data=json.dumps({"external_id": external_id}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as r:
        assert json.loads(r.read())["role_arn"] == f"arn:aws:iam::{account}:role/{CONTROL_PLANE}"


def denied(sb, account: str, **kw) -> ClientError:
    with pytest.raises(ClientError) as e:
        assume(sb, account, **kw)
    return e.value


def test_a_role_that_demands_an_external_id_refuses_callers_without_it_as_aws_does(sandbox):
    account = new_account()
    deploy(sandbox, account, "team-secret-1")
    for kw in ({}, {"external_id": "wrong-one"}):
        err = denied(sandbox, account, **kw)
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        assert err.response["Error"]["Code"] == "AccessDenied"
        assert err.response["Error"]["Message"] == (
            "User: arn:aws:sts::123456789012:user/moto is not authorized to perform: sts:AssumeRole on resource: "
            f"arn:aws:iam::{account}:role/{CONTROL_PLANE}"
        )
    creds = assume(sandbox, account, "team-secret-1")["Credentials"]
    me = (
        _session()
        .client(
            "sts",
            endpoint_url=sandbox.aws_endpoint,
            region_name=REGION,
            aws_access_key_id=creds["AccessKeyId"],
            aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"],
        )
        .get_caller_identity()
    )
    assert me["Account"] == account and CONTROL_PLANE in me["Arn"]

    # a new external ID in the stack: the old one stops working
    deploy(sandbox, account, "team-secret-2")
    assert denied(sandbox, account, external_id="team-secret-1").response["Error"]["Code"] == "AccessDenied"
    assert assume(sandbox, account, "team-secret-2")["Credentials"]["AccessKeyId"]


def test_the_role_is_deployed_on_first_use_with_the_external_id_that_use_carries(sandbox):
    with_id, without_id = new_account(), new_account()
    assume(sandbox, with_id, "first-id")
    assert denied(sandbox, with_id).response["Error"]["Code"] == "AccessDenied"
    assert denied(sandbox, with_id, external_id="other").response["Error"]["Code"] == "AccessDenied"

    assume(sandbox, without_id)
    assume(sandbox, without_id, "anything")  # no condition in that trust policy: an ID is not needed
    role = Account(sandbox, account_id=without_id).iam.get_role(RoleName=CONTROL_PLANE)["Role"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}


def trusting(acct: Account, name: str, statement: dict) -> None:
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", **statement}]}
    acct.iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(document))


def test_roles_that_do_not_exist_or_do_not_trust_the_caller_are_refused(sandbox):
    acct = Account(sandbox)
    assert denied(sandbox, acct.id, role="NoSuchRole").response["Error"]["Code"] == "AccessDenied"
    trusting(acct, "for-eks", {"Principal": {"Service": "eks.amazonaws.com"}})
    assert denied(sandbox, acct.id, role="for-eks").response["Error"]["Code"] == "AccessDenied"
    trusting(
        acct,
        "like",
        {"Principal": {"AWS": "123456789012"}, "Condition": {"StringLike": {"sts:ExternalId": "team-*"}}},
    )
    assert assume(sandbox, acct.id, "team-42", role="like")["Credentials"]
    assert denied(sandbox, acct.id, external_id="nope", role="like").response["Error"]["Code"] == "AccessDenied"
