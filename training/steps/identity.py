"""The identity a job's pods log to MLflow with: a role trusted by EKS Pod Identity whose inline policy
reaches the cluster's tracking server (`sagemaker-mlflow:*`, what the `sagemaker-mlflow` plugin signs
its calls for) and the artifact prefix of the shared bucket, the ServiceAccount the pods run as
(POD_SERVICE_ACCOUNT, in the team's namespace) and their pod identity association. Made by the first job
with MLflow on (each piece checked before it is created), used by every later one, removed with the
cluster (teardown.py)."""

from __future__ import annotations

import json

from features.catalog import POD_IDENTITY_PRINCIPAL
from features.steps.identity import Chain, ensure_chain
from instantstart.cloud.aws import team_cloud
from instantstart.operations.context import StepContext

from ..manifests import POD_SERVICE_ACCOUNT
from ..models import Job
from ..readers.files import shared_bucket
from ..readers.mlflow import ARTIFACTS, tracking_server_arn

POLICY_NAME = "InstantStartTrainingPods"


def role_name(cluster) -> str:
    return f"{cluster.resource_prefix}-training-pods"[:64]


def policy_document(cluster) -> str:
    bucket = shared_bucket(cluster)
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "TrackingServer", "Effect": "Allow", "Action": ["sagemaker-mlflow:*"],
                 "Resource": tracking_server_arn(cluster)},
                {"Sid": "Artifacts", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
                 "Resource": f"arn:aws:s3:::{bucket}/{ARTIFACTS}/*"},
                {"Sid": "ArtifactList", "Effect": "Allow", "Action": ["s3:ListBucket"],
                 "Resource": f"arn:aws:s3:::{bucket}",
                 "Condition": {"StringLike": {"s3:prefix": [f"{ARTIFACTS}/*"]}}},
            ],
        }
    )  # fmt: skip


def ensure_pod_identity(ctx: StepContext, job: Job) -> str:
    """The chain for ``job``'s cluster and namespace; the role ARN."""
    cluster = job.cluster
    chain = Chain(
        role=role_name(cluster),
        principals=(POD_IDENTITY_PRINCIPAL,),
        policy=policy_document(cluster),
        description=f"InstantStart training pods (MLflow) for {cluster.team.slug}/{cluster.name}",
        tags={**cluster.tags(), "instantstart:purpose": "training-pods"},
        namespace=job.namespace,
        service_account=POD_SERVICE_ACCOUNT,
        labels={"app.kubernetes.io/managed-by": "instantstart", "instantstart.io/purpose": "training-pods"},
        policy_name=POLICY_NAME,
        # Only this cluster's pods that run as the ServiceAccount in the team namespace get the role
        # (the session tags EKS Pod Identity sets when it assumes it).
        conditions={
            "StringEquals": {
                "aws:RequestTag/eks-cluster-name": cluster.eks_cluster_name,
                "aws:RequestTag/kubernetes-namespace": job.namespace,
                "aws:RequestTag/kubernetes-service-account": POD_SERVICE_ACCOUNT,
            }
        },
    )
    return ensure_chain(ctx, cluster, team_cloud(cluster.team, cluster.region), chain)
