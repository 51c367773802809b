"""sts:AssumeRole as AWS decides it: the role must exist and its trust policy must allow the caller,
conditions included (`sts:ExternalId` above all, the guard against the confused deputy). A refusal
is AWS's 403 AccessDenied, "User: <caller> is not authorized to perform: sts:AssumeRole on resource:
<role>". moto lets anyone assume any role, existing or not.

Every emulated account stands for a team's AWS account in which a platform engineer deployed
deploy/instantstart-role.yaml: the role InstantStartControlPlane, trusting the control plane's
account, with `Condition: StringEquals sts:ExternalId` when the ExternalId parameter is set. The
sandbox deploys it the first time the control plane assumes it (with the ExternalId that call
carries, if any); `deploy_control_plane_role` (also `POST /_sandbox/accounts/{id}/control-plane-role`)
deploys it again with another external ID, as updating the stack would.
"""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any
from urllib.parse import parse_qs, unquote

from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World

CONTROL_PLANE_ROLE = "InstantStartControlPlane"
_ROLE_ARN = re.compile(r"^arn:aws[\w-]*:iam::(\d{12}):role/(?:.*/)?([\w+=,.@-]+)$")


def _iam(account: str) -> Any:
    from moto.iam.models import iam_backends

    return iam_backends[account]["aws"]


def _role(account: str, name: str) -> Any | None:
    return next((r for r in _iam(account).roles.values() if r.name == name), None)


def trust_policy(principal_account: str, external_id: str | None) -> str:
    """The trust policy of deploy/instantstart-role.yaml for these parameters."""
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{principal_account}:root"},
        "Action": "sts:AssumeRole",
    }
    if external_id:
        statement["Condition"] = {"StringEquals": {"sts:ExternalId": external_id}}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def deploy_control_plane_role(world: World, account: str, principal_account: str, external_id: str | None) -> None:
    """Create the control-plane role in `account`, or give it the trust policy for a new external ID."""
    document = trust_policy(principal_account, external_id)
    role = _role(account, CONTROL_PLANE_ROLE)
    if role is None:
        _iam(account).create_role(
            role_name=CONTROL_PLANE_ROLE,
            assume_role_policy_document=document,
            path="/",
            permissions_boundary=None,
            description="The role InstantStart assumes in this account (deploy/instantstart-role.yaml)",
            tags=[],
            max_session_duration="3600",
        )
    else:
        role.assume_role_policy_document = document
    world.touch()


def _caller(ctx: Ctx) -> tuple[str, str]:
    """(account, ARN) of whoever signed the request, as GetCallerIdentity would say."""
    from moto.sts.models import sts_backends

    _user_id, arn, account = sts_backends[ctx.account]["aws"].get_caller_identity(ctx.req.access_key, ctx.region)
    return account, arn


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


def _principal_matches(principal: Any, account: str, arn: str) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    role_arn = None
    m = re.match(r"^arn:aws[\w-]*:sts::(\d{12}):assumed-role/([^/]+)/", arn)
    if m:  # a role session is matched by its role's ARN
        role_arn = f"arn:aws:iam::{m.group(1)}:role/{m.group(2)}"
    for p in _as_list(principal.get("AWS", [])):
        if p in ("*", account, f"arn:aws:iam::{account}:root", arn, role_arn):
            return True
    return False


def _condition_matches(conditions: dict[str, Any], context: dict[str, str | None]) -> bool:
    for operator, pairs in conditions.items():
        if_exists = operator.endswith("IfExists")
        op = operator[: -len("IfExists")] if if_exists else operator
        for key, expected in (pairs or {}).items():
            actual = context.get(key.lower())
            values = [str(v) for v in _as_list(expected)]
            if op == "Null":
                if (actual is None) != (values[0].lower() == "true"):
                    return False
                continue
            negated = "Not" in op
            if actual is None:
                if not (if_exists or negated):  # a missing key matches only negated operators
                    return False
                continue
            if op in ("StringEquals", "StringNotEquals"):
                hit = actual in values
            elif op in ("StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase"):
                hit = actual.lower() in (v.lower() for v in values)
            elif op in ("StringLike", "StringNotLike"):
                hit = any(fnmatch.fnmatchcase(actual, v) for v in values)
            else:
                return False  # an operator not modelled here never grants access
            if hit == negated:
                return False
    return True


def trust_allows(document: str, account: str, arn: str, external_id: str | None) -> bool:
    try:
        policy = json.loads(unquote(document) if document.lstrip().startswith("%") else document)
    except ValueError:
        return False
    context = {"sts:externalid": external_id, "aws:principalaccount": account, "aws:principalarn": arn}
    allowed = False
    for st in _as_list(policy.get("Statement", [])):
        actions = [str(a).lower() for a in _as_list(st.get("Action", []))]
        if not any(fnmatch.fnmatchcase("sts:assumerole", a) for a in actions):
            continue
        if not _principal_matches(st.get("Principal"), account, arn):
            continue
        if not _condition_matches(st.get("Condition") or {}, context):
            continue
        if st.get("Effect") == "Deny":
            return False
        allowed = allowed or st.get("Effect") == "Allow"
    return allowed


@handles("sts", "AssumeRole")
def assume_role(ctx: Ctx) -> Response | None:
    form = {k: v[0] for k, v in parse_qs((ctx.req.body or b"").decode("utf-8", "replace")).items()}
    params = {**{k: v[0] for k, v in ctx.req.query.items()}, **form}
    role_arn = params.get("RoleArn", "")
    external_id = params.get("ExternalId")
    account, caller = _caller(ctx)
    denied = AwsError(
        "AccessDenied", f"User: {caller} is not authorized to perform: sts:AssumeRole on resource: {role_arn}", 403
    )
    m = _ROLE_ARN.match(role_arn)
    if not m:
        return None  # malformed: moto's validation answers
    target_account, name = m.groups()
    role = _role(target_account, name)
    if role is None and name == CONTROL_PLANE_ROLE:
        deploy_control_plane_role(ctx.world, target_account, account, external_id)
        role = _role(target_account, name)
    if role is None or not trust_allows(role.assume_role_policy_document, account, caller, external_id):
        raise denied
    duration = int(params.get("DurationSeconds") or 3600)
    if duration > int(role.max_session_duration or 3600):
        raise AwsError(
            "ValidationError",
            "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.",
            400,
        )
    return None  # allowed: moto issues the credentials
