"""A feature's identity chain as one unit: IAM role (trust) + inline policy + pod identity
association (+ the ServiceAccount, when the feature owns it). Each piece is checked before it is
created and recorded at once; removal takes the same pieces away, binding first."""

from __future__ import annotations

import json

from kubernetes import client as k8s

from clusters.steps.base import ensure
from instantstart.cloud.kube import api_client
from instantstart.operations.context import StepContext

from ..catalog import FEATURE_LABEL, Feature, association_target, feature_tags, role_name

POLICY_NAME = "InstantStartFeature"


def trust_policy(f: Feature) -> str:
    assert f.identity is not None
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": list(f.identity.trust)},
                    "Action": ["sts:AssumeRole", "sts:TagSession"],
                }
            ],
        }
    )


def policy_document(f: Feature) -> str:
    assert f.identity is not None
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": list(f.identity.actions), "Resource": "*"}],
        }
    )


def _find_role(iam, name: str) -> str | None:
    try:
        return iam.get_role(RoleName=name)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        return None


def _find_association(eks, cluster_name: str, namespace: str, service_account: str) -> str | None:
    found = eks.list_pod_identity_associations(
        clusterName=cluster_name, namespace=namespace, serviceAccount=service_account
    ).get("associations", [])
    return found[0]["associationId"] if found else None


def _service_account(cluster, f: Feature, namespace: str, name: str) -> k8s.V1ServiceAccount:
    labels = {"app.kubernetes.io/managed-by": "instantstart", FEATURE_LABEL: f.name}
    return k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, labels=labels))


def ensure_identity(ctx: StepContext, cluster, cloud, f: Feature) -> str:
    """Create what is missing of the chain; returns the role ARN."""
    iam = cloud.client("iam")
    eks = cloud.client("eks")
    name = role_name(cluster, f)
    tags = [{"Key": k, "Value": v} for k, v in feature_tags(cluster, f.name).items()]
    arn = ensure(
        ctx,
        "role_arn",
        lambda: _find_role(iam, name),
        lambda: iam.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=trust_policy(f),
            Description=f"InstantStart {f.name} for {cluster.team.slug}/{cluster.name}",
            Tags=tags,
        )["Role"]["Arn"],
    )
    if not ctx.state.get("policy"):
        if POLICY_NAME not in iam.list_role_policies(RoleName=name)["PolicyNames"]:
            iam.put_role_policy(RoleName=name, PolicyName=POLICY_NAME, PolicyDocument=policy_document(f))
        ctx.record(policy=POLICY_NAME)
    target = association_target(cluster, f)
    if target is None:
        return arn
    namespace, service_account = target
    if f.identity.team_namespace and not ctx.state.get("service_account"):
        core = k8s.CoreV1Api(api_client(cloud, cluster.eks_cluster_name, cluster.region))
        try:
            core.read_namespaced_service_account(service_account, namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            core.create_namespaced_service_account(namespace, _service_account(cluster, f, namespace, service_account))
        ctx.record(service_account=f"{namespace}/{service_account}")
    ensure(
        ctx,
        "association_id",
        lambda: _find_association(eks, cluster.eks_cluster_name, namespace, service_account),
        lambda: eks.create_pod_identity_association(
            clusterName=cluster.eks_cluster_name,
            namespace=namespace,
            serviceAccount=service_account,
            roleArn=arn,
            tags=feature_tags(cluster, f.name),
        )["association"]["associationId"],
    )
    return arn


def remove_identity(ctx: StepContext, cluster, cloud, f: Feature) -> None:
    """Binding, ServiceAccount, policy, role: each removed when present (a repeat finds nothing)."""
    iam = cloud.client("iam")
    eks = cloud.client("eks")
    target = association_target(cluster, f)
    if target is not None and not ctx.state.get("association_removed"):
        namespace, service_account = target
        found = _find_association(eks, cluster.eks_cluster_name, namespace, service_account)
        if found:
            eks.delete_pod_identity_association(clusterName=cluster.eks_cluster_name, associationId=found)
        if f.identity.team_namespace:
            core = k8s.CoreV1Api(api_client(cloud, cluster.eks_cluster_name, cluster.region))
            try:
                core.delete_namespaced_service_account(service_account, namespace)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
        ctx.record(association_removed=True)
    name = role_name(cluster, f)
    if _find_role(iam, name) is None:
        return
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=name, PolicyArn=attached["PolicyArn"])
    iam.delete_role(RoleName=name)
