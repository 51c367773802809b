"""A feature's identity chain as one unit: IAM role (trust) + inline policy + pod identity
association (+ the ServiceAccount, when the feature owns it). Each piece is checked before it is
created and recorded at once; removal takes the same pieces away, binding first."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes import client as k8s

from clusters.steps.base import ensure
from instantstart.cloud.kube import api_client
from instantstart.operations.context import StepContext

from ..catalog import FEATURE_LABEL, Feature, association_target, feature_tags, role_name

POLICY_NAME = "InstantStartFeature"


def trust_policy(principals, conditions: dict | None = None) -> str:
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": list(principals)},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }
    if conditions:
        statement["Condition"] = conditions
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


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


@dataclass(frozen=True)
class Chain:
    """One identity chain: the role (trusted by ``principals``) with its inline policy, and, given a
    ``namespace``, the pod identity association of ``namespace/service_account`` (whose ServiceAccount
    is created too when ``labels`` are given: the chain owns it)."""

    role: str
    principals: tuple[str, ...]
    policy: str  # the inline policy's document (JSON)
    description: str
    tags: dict[str, str]
    namespace: str = ""
    service_account: str = ""
    labels: dict[str, str] | None = None
    policy_name: str = POLICY_NAME
    conditions: dict | None = None  # on the trust statement (e.g. the session tags EKS Pod Identity sets)


def ensure_chain(ctx: StepContext, cluster, cloud, chain: Chain) -> str:
    """Create what is missing of the chain (each piece checked first, recorded at once); the role ARN."""
    iam = cloud.client("iam")
    eks = cloud.client("eks")
    arn = ensure(
        ctx,
        "role_arn",
        lambda: _find_role(iam, chain.role),
        lambda: iam.create_role(
            RoleName=chain.role,
            AssumeRolePolicyDocument=trust_policy(chain.principals, chain.conditions),
            Description=chain.description,
            Tags=[{"Key": k, "Value": v} for k, v in chain.tags.items()],
        )["Role"]["Arn"],
    )
    if not ctx.state.get("policy"):
        if chain.policy_name not in iam.list_role_policies(RoleName=chain.role)["PolicyNames"]:
            iam.put_role_policy(RoleName=chain.role, PolicyName=chain.policy_name, PolicyDocument=chain.policy)
        ctx.record(policy=chain.policy_name)
    if not chain.namespace:
        return arn
    namespace, service_account = chain.namespace, chain.service_account
    if chain.labels is not None and not ctx.state.get("service_account"):
        core = k8s.CoreV1Api(api_client(cloud, cluster.eks_cluster_name, cluster.region))
        try:
            core.read_namespaced_service_account(service_account, namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            meta = k8s.V1ObjectMeta(name=service_account, namespace=namespace, labels=chain.labels)
            core.create_namespaced_service_account(namespace, k8s.V1ServiceAccount(metadata=meta))
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
            tags=chain.tags,
        )["association"]["associationId"],
    )
    return arn


def ensure_identity(ctx: StepContext, cluster, cloud, f: Feature) -> str:
    """Create what is missing of the feature's chain; returns the role ARN."""
    assert f.identity is not None
    namespace, service_account = association_target(cluster, f) or ("", "")
    chain = Chain(
        role=role_name(cluster, f),
        principals=tuple(f.identity.trust),
        policy=policy_document(f),
        description=f"InstantStart {f.name} for {cluster.team.slug}/{cluster.name}",
        tags=feature_tags(cluster, f.name),
        namespace=namespace,
        service_account=service_account,
        labels={"app.kubernetes.io/managed-by": "instantstart", FEATURE_LABEL: f.name}
        if f.identity.team_namespace
        else None,
    )
    return ensure_chain(ctx, cluster, cloud, chain)


def remove_role(iam, name: str) -> bool:
    """The role with its inline and attached policies, when present; whether it was there."""
    if _find_role(iam, name) is None:
        return False
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=name, PolicyArn=attached["PolicyArn"])
    iam.delete_role(RoleName=name)
    return True


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
    remove_role(iam, role_name(cluster, f))
