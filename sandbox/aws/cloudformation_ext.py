"""CloudFormation stacks as AWS builds them, where moto's CloudFormation falls short.

moto creates a template's resources but leaves out parts a real stack has:
- ``Fn::GetAZs ""`` answers us-east-1's zones whatever the stack's region;
- an AWS::IAM::Role gets none of its ManagedPolicyArns (AWS-managed policies are loaded on demand,
  sandbox/aws/iam_ext.py) and keeps its inline policies as Python objects, read back as reprs;
- an AWS::EC2::Instance ignores SecurityGroupIds and MetadataOptions;
- an AWS::EC2::SecurityGroup ignores SecurityGroupEgress and keeps the allow-all egress rule
  (with SecurityGroupEgress, CloudFormation makes exactly the given rules the group's egress);
- an AWS::EC2::Volume ignores Encrypted, VolumeType, Iops and Throughput;
- an AWS::S3::Bucket ignores VersioningConfiguration and PublicAccessBlockConfiguration.
CreateStack here runs moto's, then completes those resources as IAM, EC2 and S3 would hold them.
Resource types moto lacks altogether (AWS::SecretsManager::Secret, AWS::S3::BucketPolicy) stay
skipped, as moto skips them (the stack still completes).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.iam_ext import ensure_managed_policy

log = logging.getLogger("sandbox.aws")
_MANAGED_POLICY = re.compile(r"arn:(?:aws|\$\{AWS::Partition\}):iam::aws:policy/[A-Za-z0-9_+=,.@/-]+")


@handles("cloudformation", "CreateStack", "UpdateStack", "CreateChangeSet")
def create_stack(ctx: Ctx):
    form = parse_qs(ctx.req.body.decode("utf-8", "replace"))
    template = " ".join(form.get("TemplateBody", []))
    # A request naming an AWS-managed policy needs it loaded first (iam_ext does it per request).
    for arn in set(_MANAGED_POLICY.findall(template)):
        ensure_managed_policy(ctx.account, arn.replace("${AWS::Partition}", "aws"))
    if ctx.req.action != "CreateStack":
        return None
    with _zones_of(ctx.region):
        response = ctx.moto()
    if response[0] == 200 and form.get("StackName"):
        _complete(ctx, form["StackName"][0])
    return response


@contextlib.contextmanager
def _zones_of(region: str) -> Iterator[None]:
    """moto's Fn::GetAZs falls back to its DEFAULT_REGION for "": the stack's region, meanwhile
    (requests run one at a time under the world's lock)."""
    from moto.cloudformation import parsing

    default = parsing.DEFAULT_REGION
    parsing.DEFAULT_REGION = region
    try:
        yield
    finally:
        parsing.DEFAULT_REGION = default


def _complete(ctx: Ctx, stack_name: str) -> None:
    from moto.cloudformation.models import cloudformation_backends
    from moto.cloudformation.parsing import clean_json

    backend = cloudformation_backends[ctx.account][ctx.region]
    stack = next((s for s in backend.stacks.values() if s.name == stack_name), None)
    if stack is None:
        return
    resources = stack.resource_map
    for logical_id, definition in (stack.template_dict.get("Resources") or {}).items():
        created = resources._parsed_resources.get(logical_id)
        complete = _COMPLETERS.get(definition.get("Type"))
        if created is None or complete is None:
            continue
        try:
            complete(ctx, created, _present(clean_json(definition.get("Properties") or {}, resources)))
        except Exception:  # noqa: BLE001 - the stack exists; one resource left as moto made it
            log.warning("sandbox: could not complete %s %s of stack %s", definition["Type"], logical_id, stack_name)


def _present(value: Any) -> Any:
    """Properties as CloudFormation passes them: AWS::NoValue (None here) leaves lists and maps."""
    if isinstance(value, dict):
        return {k: _present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_present(v) for v in value if v is not None]
    return value


def _role(ctx: Ctx, role: Any, properties: dict) -> None:
    from moto.iam.models import iam_backends

    for name, document in list(role.policies.items()):
        if not isinstance(document, str):
            role.policies[name] = json.dumps(document)
    iam = iam_backends[ctx.account]["aws"]
    for arn in properties.get("ManagedPolicyArns") or []:
        if not arn.startswith("arn:aws:iam::aws:") or ensure_managed_policy(ctx.account, arn):
            iam.attach_role_policy(arn, role.name)


def _instance(ctx: Ctx, instance: Any, properties: dict) -> None:
    from moto.ec2.models import ec2_backends

    ec2 = ec2_backends[ctx.account][ctx.region]
    if properties.get("SecurityGroupIds"):
        ec2.modify_instance_security_groups(instance.id, list(properties["SecurityGroupIds"]))
    options = properties.get("MetadataOptions")
    if options:
        ec2.modify_instance_metadata_options(
            instance.id,
            http_tokens=options.get("HttpTokens", "optional"),
            hop_limit=int(options.get("HttpPutResponseHopLimit", 1)),
            http_endpoint=options.get("HttpEndpoint", "enabled"),
            http_protocol=options.get("HttpProtocolIpv6", "disabled"),
            metadata_tags=options.get("InstanceMetadataTags", "disabled"),
        )


def _security_group(ctx: Ctx, group: Any, properties: dict) -> None:
    from moto.ec2.models import ec2_backends

    rules = properties.get("SecurityGroupEgress")
    if not rules:
        return
    group.egress_rules = []
    ec2 = ec2_backends[ctx.account][ctx.region]
    for rule in rules:
        ranges = [{"CidrIp": rule["CidrIp"], "Description": rule.get("Description", "")}] if rule.get("CidrIp") else []
        target = rule.get("DestinationSecurityGroupId")
        ec2.authorize_security_group_egress(
            group.id,
            str(rule["IpProtocol"]),
            str(rule.get("FromPort", "")),
            str(rule.get("ToPort", "")),
            ranges,
            source_groups=[{"GroupId": target}] if target else [],
            vpc_id=group.vpc_id,
        )


def _volume(ctx: Ctx, volume: Any, properties: dict) -> None:
    volume.encrypted = bool(properties.get("Encrypted", False))
    volume.kms_key_id = properties.get("KmsKeyId") or volume.kms_key_id
    volume.volume_type = properties.get("VolumeType", volume.volume_type)
    if volume.volume_type == "gp3":  # EBS's gp3 baseline unless given
        volume.iops = int(properties.get("Iops", 3000))
        volume.throughput = int(properties.get("Throughput", 125))


def _bucket(ctx: Ctx, bucket: Any, properties: dict) -> None:
    from moto.s3.models import s3_backends

    s3 = s3_backends[ctx.account]["aws"]
    versioning = (properties.get("VersioningConfiguration") or {}).get("Status")
    if versioning:
        s3.put_bucket_versioning(bucket.name, versioning)
    block = properties.get("PublicAccessBlockConfiguration")
    if block:
        s3.put_public_access_block(bucket.name, {k: bool(v) for k, v in block.items()})


_COMPLETERS = {
    "AWS::IAM::Role": _role,
    "AWS::EC2::Instance": _instance,
    "AWS::EC2::SecurityGroup": _security_group,
    "AWS::EC2::Volume": _volume,
    "AWS::S3::Bucket": _bucket,
}
