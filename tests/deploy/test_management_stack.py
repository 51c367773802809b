"""The management stack and the team role, created through CloudFormation in the sandbox's AWS (moto's
CloudFormation, completed by sandbox/aws/cloudformation_ext.py, makes the EC2, IAM, S3 and Logs
resources): what they create, what they output, and that each role can do what the product needs
and nothing broader.

Two resource types moto's CloudFormation lacks (AWS::SecretsManager::Secret, AWS::S3::BucketPolicy)
are skipped there; for those the test reads the template, and says so.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from deploy import iam_policy
from deploy.iam_actions import CONTROL_PLANE, TEAM, discover
from tests.deploy.policies import actions_of
from tests.deploy.processes import ROOT

REGION = "us-west-2"
AL2023 = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
# Types moto's CloudFormation skips (the stack still completes): checked in the template.
MOTO_SKIPS = {"AWS::SecretsManager::Secret", "AWS::S3::BucketPolicy"}


class Account:
    """boto3 clients for one emulated AWS account (entered, as every sandbox account is, through the
    role the sandbox gives each account)."""

    def __init__(self, endpoint: str) -> None:
        self.id = str(random.randint(10**11, 10**12 - 1))
        self.endpoint = endpoint
        sts = boto3.client(
            "sts", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
        )
        self.credentials = sts.assume_role(
            RoleArn=f"arn:aws:iam::{self.id}:role/InstantStartControlPlane", RoleSessionName="deploy"
        )["Credentials"]

    def client(self, service: str):
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.credentials["AccessKeyId"],
            aws_secret_access_key=self.credentials["SecretAccessKey"],
            aws_session_token=self.credentials["SessionToken"],
        )

    def create_stack(self, name: str, template: Path, **parameters: str) -> dict:
        cfn = self.client("cloudformation")
        cfn.create_stack(
            StackName=name,
            TemplateBody=template.read_text(),
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        )
        stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        return stack

    def resources(self, name: str) -> dict[str, dict]:
        summaries = self.client("cloudformation").list_stack_resources(StackName=name)["StackResourceSummaries"]
        return {r["LogicalResourceId"]: r for r in summaries if r.get("LogicalResourceId")}

    def role_policies(self, role_name: str) -> dict[str, dict]:
        iam = self.client("iam")
        return {
            name: iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
            for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]
        }


def outputs(stack: dict) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


@pytest.fixture(scope="module")
def walk():
    return discover()


@pytest.fixture(scope="module")
def account(sandbox_server) -> Account:
    return Account(sandbox_server.aws_endpoint)


@pytest.fixture(scope="module")
def stack(account) -> dict:
    """The default stack, created once: a new VPC, PostgreSQL and Redis on the instance, a new bucket."""
    return account.create_stack("instantstart", iam_policy.MANAGEMENT_TEMPLATE, ImageTag="v1")


@pytest.fixture(scope="module")
def instance(account, stack) -> dict:
    reservations = account.client("ec2").describe_instances(InstanceIds=[outputs(stack)["InstanceId"]])
    return reservations["Reservations"][0]["Instances"][0]


@pytest.fixture(scope="module")
def template() -> dict:
    return iam_policy.load_template(iam_policy.MANAGEMENT_TEMPLATE)


def test_the_instance_is_amazon_linux_2023_in_a_private_subnet_with_no_way_in(account, stack, instance, template):
    ec2, resources = account.client("ec2"), account.resources("instantstart")
    image = account.client("ssm").get_parameter(Name=AL2023)["Parameter"]["Value"]
    assert instance["ImageId"] == image and instance["State"]["Name"] == "running"
    assert instance["SubnetId"] == resources["PrivateSubnet"]["PhysicalResourceId"]
    assert "PublicIpAddress" not in instance and "KeyName" not in instance
    assert instance["IamInstanceProfile"]["Arn"].endswith(resources["InstanceProfile"]["PhysicalResourceId"])
    (group,) = ec2.describe_security_groups(GroupIds=[g["GroupId"] for g in instance["SecurityGroups"]])[
        "SecurityGroups"
    ]
    assert group["IpPermissions"] == [], "no inbound rule at all"
    assert [(p["IpProtocol"], p["FromPort"], p["ToPort"]) for p in group["IpPermissionsEgress"]] == [("tcp", 443, 443)]
    assert group["GroupId"] == account.resources("instantstart")["InstanceSecurityGroup"]["PhysicalResourceId"]
    assert instance["MetadataOptions"]["HttpTokens"] == "required"  # IMDSv2 only
    assert instance["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert instance["Placement"]["AvailabilityZone"].startswith(REGION)
    assert "KeyName" not in template["Resources"]["Instance"]["Properties"]
    assert template["Resources"]["Instance"]["CreationPolicy"]["ResourceSignal"]["Count"] == 1


def test_the_vpc_keeps_ssm_ecr_s3_and_sts_inside_and_goes_out_through_a_nat(account, stack):
    ec2, resources = account.client("ec2"), account.resources("instantstart")
    vpc_id = resources["Vpc"]["PhysicalResourceId"]
    endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
    by_service = {
        e["ServiceName"].rsplit(".", 1)[-1] if "ecr" not in e["ServiceName"] else e["ServiceName"]: e for e in endpoints
    }
    interface = {
        "ssm",
        "ssmmessages",
        "ec2messages",
        "sts",
        f"com.amazonaws.{REGION}.ecr.api",
        f"com.amazonaws.{REGION}.ecr.dkr",
    }
    assert interface | {"s3"} == set(by_service)
    for name in interface:
        assert by_service[name]["VpcEndpointType"] == "Interface" and by_service[name]["PrivateDnsEnabled"], name
    assert by_service["s3"]["VpcEndpointType"] == "Gateway"
    private_table = resources["PrivateRouteTable"]["PhysicalResourceId"]
    (table,) = ec2.describe_route_tables(RouteTableIds=[private_table])["RouteTables"]
    nat = next(r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0")
    assert nat.get("NatGatewayId") == resources["NatGateway"]["PhysicalResourceId"]
    subnet = ec2.describe_subnets(SubnetIds=[resources["PrivateSubnet"]["PhysicalResourceId"]])["Subnets"][0]
    assert subnet["MapPublicIpOnLaunch"] is False


def test_volumes_are_encrypted_and_the_data_volume_outlives_the_instance(account, stack, instance, template):
    ec2 = account.client("ec2")
    root = instance["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]
    data_id = outputs(stack)["DataVolumeId"]
    volumes = {v["VolumeId"]: v for v in ec2.describe_volumes(VolumeIds=[root, data_id])["Volumes"]}
    assert volumes[root]["Encrypted"] and volumes[data_id]["Encrypted"]
    assert volumes[data_id]["AvailabilityZone"] == instance["Placement"]["AvailabilityZone"]
    assert volumes[data_id]["VolumeType"] == "gp3" and volumes[data_id]["Size"] == 50
    data = template["Resources"]["DataVolume"]
    assert data["DeletionPolicy"] == data["UpdateReplacePolicy"] == "Snapshot"


def test_the_shared_bucket_is_versioned_encrypted_private_and_kept(account, stack, template):
    s3, bucket = account.client("s3"), outputs(stack)["SharedBucketName"]
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert block == dict.fromkeys(
        ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"), True
    )
    # moto's CloudFormation has no AWS::S3::BucketPolicy: the TLS-only policy is read from the template.
    statement = template["Resources"]["SharedBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert statement["Effect"] == "Deny" and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert template["Resources"]["SharedBucket"]["DeletionPolicy"] == "Retain"


def test_the_instance_role_can_do_what_the_product_needs_and_nothing_broader(account, stack, template, walk):
    role_arn = outputs(stack)["ControlPlaneRoleArn"]
    role_name = role_arn.rsplit("/", 1)[-1]
    attached = account.client("iam").list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    assert [p["PolicyArn"] for p in attached] == ["arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"]
    policies = account.role_policies(role_name)
    assert set(policies) == {"ControlPlane", "Instance"}
    # As itself the control plane only assumes the teams' roles: exactly the calls the code makes.
    (assume,) = policies["ControlPlane"]["Statement"]
    assert actions_of([assume]) == iam_policy.required_actions(walk.calls, CONTROL_PLANE)
    assert assume["Resource"] == "arn:aws:iam::*:role/InstantStartControlPlane"
    assert assume["Condition"] == {"Null": {"sts:ExternalId": "false"}}
    # The instance's own needs: exactly what its setup scripts and units run.
    needed = iam_policy.script_actions(iam_policy.instance_scripts(template))
    assert actions_of(policies["Instance"]["Statement"]) == set(needed)
    for statement in policies["Instance"]["Statement"]:
        if statement["Resource"] == "*":
            assert statement["Action"] in ("ecr:GetAuthorizationToken", "ec2:DescribeVolumes"), statement
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        assert all(not a.endswith("*") for a in actions)


def test_the_outputs_say_how_to_reach_the_portal_and_log_in(account, stack, instance, tmp_path):
    out = outputs(stack)
    assert out["InstanceId"] == instance["InstanceId"]
    command = out["PortForwardCommand"]
    assert command == (
        f"aws ssm start-session --target {instance['InstanceId']} --document-name AWS-StartPortForwardingSession "
        f"--parameters portNumber=3099,localPortNumber=3099 --region {REGION}"
    )
    # The AWS CLI itself reads the command into the StartSession request it would send.
    env = {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "AWS_ACCESS_KEY_ID": account.credentials["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": account.credentials["SecretAccessKey"],
        "AWS_SESSION_TOKEN": account.credentials["SessionToken"],
        "AWS_MAX_ATTEMPTS": "1",
    }
    cli = subprocess.run(
        [*command.split(), "--endpoint-url", account.endpoint, "--debug"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    body = re.search(r"'body': b'(\{.*?\})'", cli.stderr)
    assert body, cli.stderr[-3000:]
    assert json.loads(body.group(1)) == {
        "Target": instance["InstanceId"],
        "DocumentName": "AWS-StartPortForwardingSession",
        "Parameters": {"portNumber": ["3099"], "localPortNumber": ["3099"]},
    }
    assert out["AdminPasswordCommand"].startswith("aws secretsmanager get-secret-value --secret-id ")
    assert out["LogGroupName"] == "/instantstart/instantstart"
    assert account.client("logs").describe_log_groups(logGroupNamePrefix="/instantstart/")["logGroups"]


def test_moto_skips_only_what_the_template_checks_cover(account, stack, template):
    created = set(account.resources("instantstart"))
    declared = {name: spec["Type"] for name, spec in template["Resources"].items()}
    assert {declared[name] for name in set(declared) - created} == MOTO_SKIPS
    secret = template["Resources"]["AdminPassword"]["Properties"]["GenerateSecretString"]
    assert secret["PasswordLength"] >= 20


def test_the_instance_scripts_are_valid_bash(template, tmp_path):
    rendered = _render_sub(template["Resources"]["Instance"]["Properties"]["UserData"]["Fn::Base64"]["Fn::Sub"])
    scripts = {"user-data": rendered}
    files = template["Resources"]["Instance"]["Metadata"]["AWS::CloudFormation::Init"]["files"]["files"]
    for path, spec in files.items():
        content = spec["content"]
        if isinstance(content, str) and content.startswith("#!/bin/bash"):
            scripts[Path(path).name] = content
    assert {"instantstart-data-volume", "instantstart-prepare", "instantstart-backup", "instantstart-restore"} <= set(
        scripts
    )
    for name, text in scripts.items():
        path = tmp_path / name
        path.write_text(text)
        check = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, f"{name}: {check.stderr}"
        assert "set -euo pipefail" in text, name
    if shutil.which("shellcheck"):  # Debian's shellcheck, where installed: warnings and errors
        lint = subprocess.run(
            ["shellcheck", "--severity=warning", *[str(tmp_path / n) for n in scripts]], capture_output=True, text=True
        )
        assert lint.returncode == 0, lint.stdout
    # The stack is signalled only after /healthz answers (or a replacement is ready to take over).
    assert rendered.index("/healthz") < rendered.rindex('signal 0 "InstantStart is healthy"')


def _render_sub(text: str) -> str:
    """What CloudFormation's Fn::Sub makes of a body: ${Name} replaced, ${!x} kept as ${x}."""
    text = re.sub(r"\$\{(?!!)[A-Za-z0-9:.]+\}", "value", text)
    return text.replace("${!", "${")


def test_an_existing_vpc_rds_and_bucket_add_no_network_no_database_and_no_bucket(sandbox_server, walk):
    account = Account(sandbox_server.aws_endpoint)
    ec2 = account.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.60.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.60.1.0/24", AvailabilityZone=f"{REGION}b")["Subnet"]
    account.client("s3").create_bucket(Bucket="acme-platform", CreateBucketConfiguration={"LocationConstraint": REGION})
    database = account.client("secretsmanager").create_secret(
        Name="instantstart/database", SecretString="postgres://instantstart:pw@db.example.internal:5432/instantstart"
    )["ARN"]
    stack = account.create_stack(
        "instantstart-existing",
        iam_policy.MANAGEMENT_TEMPLATE,
        ImageTag="v1",
        VpcId=vpc,
        SubnetId=subnet["SubnetId"],
        AvailabilityZone=f"{REGION}b",
        DatabaseUrlSecretArn=database,
        SharedBucketName="acme-platform",
    )
    created = {r["ResourceType"] for r in account.resources("instantstart-existing").values()}
    assert not created & {"AWS::EC2::VPC", "AWS::EC2::NatGateway", "AWS::EC2::VPCEndpoint", "AWS::S3::Bucket"}
    out = outputs(stack)
    (instance,) = ec2.describe_instances(InstanceIds=[out["InstanceId"]])["Reservations"][0]["Instances"]
    assert instance["SubnetId"] == subnet["SubnetId"] and out["SharedBucketName"] == "acme-platform"
    volume = ec2.describe_volumes(VolumeIds=[out["DataVolumeId"]])["Volumes"][0]
    assert volume["AvailabilityZone"] == f"{REGION}b"
    group = ec2.describe_security_groups(GroupIds=[out["InstanceSecurityGroupId"]])["SecurityGroups"][0]
    assert group["IpPermissions"] == [] and group["VpcId"] == vpc
    assert sorted(p["FromPort"] for p in group["IpPermissionsEgress"]) == [443, 5432]
    policies = account.role_policies(out["ControlPlaneRoleArn"].rsplit("/", 1)[-1])
    statements = {s["Sid"]: s for s in policies["Instance"]["Statement"]}
    assert database in statements["ReadItsSecrets"]["Resource"]
    assert statements["DatabaseBackups"]["Resource"] == "arn:aws:s3:::acme-platform/backups/*"


def test_an_upgrade_is_a_stack_update_with_a_new_image_tag(account, stack):
    cfn = account.client("cloudformation")
    cfn.update_stack(
        StackName="instantstart",
        TemplateBody=iam_policy.MANAGEMENT_TEMPLATE.read_text(),
        Capabilities=["CAPABILITY_IAM"],
        Parameters=[{"ParameterKey": "ImageTag", "ParameterValue": "v2"}],
    )
    updated = cfn.describe_stacks(StackName="instantstart")["Stacks"][0]
    assert updated["StackStatus"] == "UPDATE_COMPLETE"
    # Only the instance's metadata changed (cfn-hup applies it): the instance and its data stay.
    assert outputs(updated)["InstanceId"] == outputs(stack)["InstanceId"]
    assert outputs(updated)["DataVolumeId"] == outputs(stack)["DataVolumeId"]
    template = iam_policy.load_template(iam_policy.MANAGEMENT_TEMPLATE)
    release = template["Resources"]["Instance"]["Metadata"]["AWS::CloudFormation::Init"]["files"]["files"][
        "/etc/instantstart/release.env"
    ]["content"]["Fn::Sub"][0]
    assert "${ImageRepository}:${ImageTag}" in release
    assert "ImageTag" not in json.dumps(template["Resources"]["Instance"]["Properties"]["UserData"])


@pytest.mark.parametrize("imported", ["false", "true"])
def test_the_team_role_trusts_only_the_control_plane_with_the_external_id(sandbox_server, stack, walk, imported):
    team_account = Account(sandbox_server.aws_endpoint)
    control_plane = outputs(stack)["ControlPlaneRoleArn"]
    # The sandbox's own way into the account holds the default name: this stack names its role.
    team_stack = team_account.create_stack(
        "instantstart-role",
        iam_policy.TEAM_TEMPLATE,
        ControlPlaneRoleArn=control_plane,
        ExternalId="e1f2a3b4c5d6",
        RoleName="InstantStartTeam",
        ManageImportedClusters=imported,
    )
    role_arn = outputs(team_stack)["RoleArn"]
    assert role_arn == f"arn:aws:iam::{team_account.id}:role/InstantStartTeam"
    role = team_account.client("iam").get_role(RoleName="InstantStartTeam")["Role"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"AWS": f"arn:aws:iam::{control_plane.split(':')[4]}:root"}
    assert trust["Condition"] == {
        "StringEquals": {"sts:ExternalId": "e1f2a3b4c5d6", "aws:PrincipalArn": control_plane},
    }
    (policy,) = team_account.role_policies("InstantStartTeam").values()
    statements = [s for s in policy["Statement"] if s]
    assert actions_of(statements) == iam_policy.required_actions(walk.calls, TEAM)
    sids = {s["Sid"] for s in statements}
    assert ("ImportedClusters" in sids) == (imported == "true")
    for statement in statements:
        if statement["Sid"] != "ReadAnything" and statement["Resource"] == "*":
            assert "Condition" in statement, statement["Sid"]


def test_every_template_passes_cfn_lint():
    templates = [*sorted((ROOT / "deploy" / "cloudformation").glob("*.yaml")), iam_policy.TEAM_TEMPLATE]
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), *map(str, templates)], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
