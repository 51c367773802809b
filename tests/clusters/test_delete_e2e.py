"""cluster.delete end to end: reverse teardown that leaves nothing tagged with the cluster behind."""

from __future__ import annotations

import pytest

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from tests.clusters.helpers import cluster_body, creates_in, sandbox_calls, wait_for_operation

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


def tagged_leftovers(team, cluster_id: str) -> dict[str, list]:
    """Everything in the team's account still tagged with the cluster, service by service."""
    cloud = team_cloud(team, "us-west-2")
    ec2 = cloud.client("ec2")
    owned = [{"Name": "tag:instantstart:cluster-id", "Values": [cluster_id]}]
    left = {
        "vpcs": [v["VpcId"] for v in ec2.describe_vpcs(Filters=owned)["Vpcs"]],
        "subnets": [s["SubnetId"] for s in ec2.describe_subnets(Filters=owned)["Subnets"]],
        "internet_gateways": [
            g["InternetGatewayId"] for g in ec2.describe_internet_gateways(Filters=owned)["InternetGateways"]
        ],
        # Checked by tag here: the sandbox's DescribeNatGateways ignores tag filters.
        "nat_gateways": [
            n["NatGatewayId"]
            for n in ec2.describe_nat_gateways()["NatGateways"]
            if n["State"] != "deleted" and {"Key": "instantstart:cluster-id", "Value": cluster_id} in n.get("Tags", [])
        ],
        "addresses": [a["AllocationId"] for a in ec2.describe_addresses(Filters=owned)["Addresses"]],
        "security_groups": [g["GroupId"] for g in ec2.describe_security_groups(Filters=owned)["SecurityGroups"]],
        "route_tables": [t["RouteTableId"] for t in ec2.describe_route_tables(Filters=owned)["RouteTables"]],
    }
    eks = cloud.client("eks")
    left["eks"] = [
        name
        for name in eks.list_clusters()["clusters"]
        if eks.describe_cluster(name=name)["cluster"].get("tags", {}).get("instantstart:cluster-id") == cluster_id
    ]
    sagemaker = cloud.client("sagemaker")
    left["hyperpod"] = [
        c["ClusterName"]
        for c in sagemaker.list_clusters()["ClusterSummaries"]
        if {"Key": "instantstart:cluster-id", "Value": cluster_id}
        in sagemaker.list_tags(ResourceArn=c["ClusterArn"]).get("Tags", [])
    ]
    iam = cloud.client("iam")
    left["roles"] = [
        r["RoleName"]
        for r in iam.list_roles()["Roles"]
        if any(
            t["Key"] == "instantstart:cluster-id" and t["Value"] == cluster_id
            for t in iam.list_role_tags(RoleName=r["RoleName"])["Tags"]
        )
    ]
    s3 = cloud.client("s3")
    buckets = []
    for bucket in s3.list_buckets().get("Buckets", []):
        try:
            tags = s3.get_bucket_tagging(Bucket=bucket["Name"])["TagSet"]
        except s3.exceptions.ClientError:
            continue
        if {"Key": "instantstart:cluster-id", "Value": cluster_id} in tags:
            buckets.append(bucket["Name"])
    left["buckets"] = buckets
    left["mlflow"] = [
        t["TrackingServerName"]
        for t in sagemaker.list_mlflow_tracking_servers()["TrackingServerSummaries"]
        if t.get("TrackingServerStatus") != "Deleted"
        and {"Key": "instantstart:cluster-id", "Value": cluster_id}
        in sagemaker.list_tags(ResourceArn=t["TrackingServerArn"]).get("Tags", [])
    ]
    return {kind: items for kind, items in left.items() if items}


def _job_made(team, cluster) -> list[str]:
    """The MLflow tracking server and the training pods' role a job with MLflow on makes (as its apply
    phase names and tags them); their names."""
    from clusters.steps.base import aws_tags
    from features.steps.identity import trust_policy
    from training.readers.mlflow import tracking_server_name
    from training.steps.identity import role_name

    cloud = team_cloud(team, "us-west-2")
    server = tracking_server_name(cluster)
    cloud.client("sagemaker").create_mlflow_tracking_server(
        TrackingServerName=server,
        ArtifactStoreUri="s3://somewhere/mlflow",
        RoleArn=cluster.identity.get("execution_role_arn", ""),
        Tags=aws_tags(cluster),
    )
    trust = trust_policy(("pods.eks.amazonaws.com",))
    cloud.client("iam").create_role(RoleName=role_name(cluster), AssumeRolePolicyDocument=trust, Tags=aws_tags(cluster))
    return [server, role_name(cluster)]


def test_delete_tears_down_everything_and_only_its_own(admin_api, team, start_worker, sandbox):
    start_worker()
    doomed = admin_api.post("/api/v1/clusters/", cluster_body("doomed"), format="json").json()
    keeper = admin_api.post("/api/v1/clusters/", cluster_body("keeper"), format="json").json()
    wait_for_operation(doomed["operation"]["id"])
    wait_for_operation(keeper["operation"]["id"])
    cluster_id, keeper_id = doomed["cluster"]["id"], keeper["cluster"]["id"]
    assert tagged_leftovers(team, cluster_id)  # the check sees what a cluster owns
    kept_before = tagged_leftovers(team, keeper_id)
    # Two clusters in one account: each has its own network, NAT gateway included.
    assert creates_in(sandbox_calls(sandbox, team.sandbox_account_id))["ec2:CreateNatGateway"] == 2
    assert set(kept_before["nat_gateways"]).isdisjoint(tagged_leftovers(team, cluster_id)["nat_gateways"])
    # What its first job with MLflow on made: the tracking server and the role the pods log with.
    made = _job_made(team, Cluster.objects.get(pk=cluster_id))
    assert set(made) <= {*tagged_leftovers(team, cluster_id)["mlflow"], *tagged_leftovers(team, cluster_id)["roles"]}

    response = admin_api.delete(f"/api/v1/clusters/{cluster_id}/")
    assert response.status_code == 202
    operation = response.json()["operation"]
    assert [p["name"] for p in operation["phases"]] == [
        "storage",
        "hyperpod",
        "eks",
        "features",
        "training",
        "identity",
        "network",
    ]
    wait_for_operation(operation["id"])
    assert tagged_leftovers(team, cluster_id) == {}
    assert tagged_leftovers(team, keeper_id) == kept_before  # the other cluster is untouched
    assert Cluster.objects.get(pk=cluster_id).status == "deleted"
    assert admin_api.get(f"/api/v1/clusters/{cluster_id}/").status_code == 404
    assert cluster_id not in [c["id"] for c in admin_api.get("/api/v1/clusters/").json()["results"]]
    # The name is free again.
    again = admin_api.post("/api/v1/clusters/", cluster_body("doomed"), format="json")
    assert again.status_code == 202


def test_delete_is_refused_while_the_cluster_is_still_being_created_unless_forced(admin_api, team):
    body = admin_api.post("/api/v1/clusters/", cluster_body("busy"), format="json").json()  # no worker: stays pending
    cluster_id = body["cluster"]["id"]
    refused = admin_api.delete(f"/api/v1/clusters/{cluster_id}/")
    assert refused.status_code == 409 and "still running" in refused.json()["error"]["message"]
    forced = admin_api.delete(f"/api/v1/clusters/{cluster_id}/?force=true")
    assert forced.status_code == 202
    assert forced.json()["operation"]["kind"] == "cluster.delete"
