"""AWS-managed IAM policies, loaded on demand; IAM roles made by CloudFormation completed.

moto can preload all ~1300 AWS-managed policies per account (MOTO_IAM_LOAD_MANAGED_POLICIES), which
makes every account 25x bigger to snapshot. Instead, just before a request names one
(arn:aws:iam::aws:policy/..., or arn:${AWS::Partition}:... in a template), we add that policy, from
moto's own copy of the real data, to the account's IAM backend; then moto handles the request as usual.

moto's CloudFormation creates an AWS::IAM::Role without its ManagedPolicyArns and keeps its inline
policies as Python objects; after CreateStack the roles get both as IAM would have them.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs, unquote

from sandbox.aws.handlers import Ctx, handles

_ARN_RE = re.compile(r"arn:aws:iam::aws:policy/[A-Za-z0-9_+=,.@/-]+")
_PARTITION = "${AWS::Partition}"


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


@handles("cloudformation", "CreateStack", "UpdateStack", "CreateChangeSet")
def cfn_templates(ctx: Ctx):
    form = parse_qs(ctx.req.body.decode("utf-8", "replace"))
    _seed_from(ctx, " ".join(form.get("TemplateBody", [])).replace(_PARTITION, "aws"))
    if ctx.req.action != "CreateStack":
        return None
    response = ctx.moto()
    if response[0] == 200 and form.get("StackName"):
        _complete_stack_roles(ctx, form["StackName"][0])
    return response


def _complete_stack_roles(ctx: Ctx, stack_name: str) -> None:
    from moto.cloudformation.models import cloudformation_backends
    from moto.cloudformation.parsing import clean_json
    from moto.iam.models import Role, iam_backends

    backend = cloudformation_backends[ctx.account][ctx.region]
    stack = next((s for s in backend.stacks.values() if s.name == stack_name), None)
    if stack is None:
        return
    iam = iam_backends[ctx.account]["aws"]
    resources = stack.resource_map
    for logical_id, definition in stack.template_dict.get("Resources", {}).items():
        role = resources._parsed_resources.get(logical_id)
        if definition.get("Type") != "AWS::IAM::Role" or not isinstance(role, Role):
            continue
        for policy_name, document in list(role.policies.items()):
            if not isinstance(document, str):
                role.policies[policy_name] = json.dumps(document)
        properties = definition.get("Properties") or {}
        for arn in clean_json(properties.get("ManagedPolicyArns") or [], resources):
            if isinstance(arn, str) and (not arn.startswith("arn:aws:iam::aws:") or ensure_managed_policy(ctx.account, arn)):
                iam.attach_role_policy(arn, role.name)
