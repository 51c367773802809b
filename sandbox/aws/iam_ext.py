"""AWS-managed IAM policies, loaded on demand.

moto can preload all ~1300 AWS-managed policies per account (MOTO_IAM_LOAD_MANAGED_POLICIES), which
makes every account 25x bigger to snapshot. Instead, just before a request names one
(arn:aws:iam::aws:policy/...), we add that policy, from moto's own copy of the real data, to the
account's IAM backend; then moto handles the request as usual.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from sandbox.aws.handlers import Ctx, handles

_ARN_RE = re.compile(r"arn:aws:iam::aws:policy/[A-Za-z0-9_+=,.@/-]+")


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    return json.loads(aws_managed_policies_data)


def ensure_managed_policy(account: str, arn: str) -> bool:
    from moto.iam.models import AWSManagedPolicy, iam_backends

    backend = iam_backends[account]["aws"]
    if arn in backend.managed_policies:
        return True
    name = arn.rsplit("/", 1)[-1]
    data = _data().get(name)
    if data is None:
        return False
    policy = AWSManagedPolicy.from_data(name, account, "us-east-1", data)
    if policy.arn != arn:  # path mismatch (e.g. service-role/...): still register under the requested ARN
        return False
    backend.managed_policies[policy.arn] = policy
    backend.aws_managed_policies.append(policy)
    return True


def _seed_from(ctx: Ctx, text: str) -> None:
    for arn in set(_ARN_RE.findall(text)):
        ensure_managed_policy(ctx.account, arn)


@handles(
    "iam",
    "AttachRolePolicy",
    "DetachRolePolicy",
    "AttachUserPolicy",
    "DetachUserPolicy",
    "AttachGroupPolicy",
    "DetachGroupPolicy",
    "GetPolicy",
    "GetPolicyVersion",
    "ListEntitiesForPolicy",
    "ListPolicyVersions",
    "PutRolePermissionsBoundary",
    "CreateRole",
)
def iam_policy_arn(ctx: Ctx) -> None:
    _seed_from(ctx, unquote(ctx.req.body.decode("utf-8", "replace")))
    return None
