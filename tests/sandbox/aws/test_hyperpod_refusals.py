"""What SageMaker refuses before anything is created: node labels and taints Kubernetes would never
accept, and instances beyond the account's quotas across all its HyperPod clusters."""

from __future__ import annotations

import json
import urllib.request

import botocore.session
import pytest
from botocore.exceptions import ClientError

from tests.sandbox.conftest import eks_cluster, hyperpod, wait_for

KEY_SHAPE = botocore.session.get_session().get_service_model("sagemaker").shape_for("ClusterKubernetesLabelKey")


def refused(fn, *args, **kwargs) -> dict:
    with pytest.raises(ClientError) as e:
        fn(*args, **kwargs)
    return e.value.response["Error"]


def group(name: str = "g", count: int = 1, itype: str = "ml.g5.xlarge", **kw) -> dict:
    return {"InstanceGroupName": name, "InstanceType": itype, "InstanceCount": count, **kw}


def update_group(account, cluster: str, **spec) -> None:
    account.sagemaker.update_cluster(
        ClusterName=cluster,
        InstanceGroups=[
            {
                **group(**spec),
                "ExecutionRole": f"arn:aws:iam::{account.id}:role/{cluster}-exec",
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/lc/", "OnCreate": "on_create.sh"},
            }
        ],
    )


def test_node_labels_and_taints_kubernetes_refuses_are_refused_by_create_and_update(account):
    eks = eks_cluster(account)
    error = refused(hyperpod, account, "bad1", eks, [group(KubernetesConfig={"Labels": {"bad key!": "v"}})])
    assert error["Code"] == "ValidationException"
    assert error["Message"] == (
        "1 validation error detected: Value '{bad key!=v}' at 'instanceGroups.1.member.kubernetesConfig.labels' "
        "failed to satisfy constraint: Map keys must satisfy constraint: [Member must have length less than or "
        "equal to 317, Member must have length greater than or equal to 1, Member must satisfy regular expression "
        f"pattern: {KEY_SHAPE.metadata['pattern']}]"
    )
    error = refused(
        hyperpod,
        account,
        "bad2",
        eks,
        [
            group(
                KubernetesConfig={
                    "Taints": [{"Key": "gpu", "Value": "bad value!", "Effect": "Sometimes"}],
                    "Labels": {"ok": "yes"},
                }
            )
        ],
    )
    assert error["Message"].startswith("2 validation errors detected: ")
    assert (
        "Value 'Sometimes' at 'instanceGroups.1.member.kubernetesConfig.taints.1.member.effect' failed to satisfy "
        "constraint: Member must satisfy enum value set: [NoSchedule, PreferNoSchedule, NoExecute]"
    ) in error["Message"]
    assert "at 'instanceGroups.1.member.kubernetesConfig.taints.1.member.value'" in error["Message"]
    # what the model's pattern lets through but Kubernetes refuses: a name part of 64 characters
    long_key = "example.com/" + "a" * 64
    error = refused(hyperpod, account, "bad3", eks, [group(KubernetesConfig={"Labels": {long_key: "v"}})])
    assert error["Code"] == "ValidationException" and "name part must be no more than 63 characters" in error["Message"]
    assert account.sagemaker.list_clusters()["ClusterSummaries"] == []  # nothing was created

    hyperpod(account, "good", eks, [group(KubernetesConfig={"Labels": {"team": "a"}})])
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="good")["ClusterStatus"] == "InService")
    error = refused(update_group, account, "good", KubernetesConfig={"Labels": {"bad key!": "v"}})
    assert error["Code"] == "ValidationException" and "Map keys must satisfy constraint" in error["Message"]
    described = account.sagemaker.describe_cluster(ClusterName="good")
    assert described["ClusterStatus"] == "InService"
    assert described["InstanceGroups"][0]["KubernetesConfig"]["CurrentLabels"] == {"team": "a"}


def quota_message(itype: str, limit: int, usage: int, delta: int) -> str:
    return (
        f"The account-level service limit '{itype} for cluster usage' is {limit} Instances, with current utilization "
        f"of {usage} Instances and a request delta of {delta} Instances. Please use AWS Service Quotas to request an "
        "increase for this quota. If AWS Service Quotas is not available, contact AWS support to request an increase "
        "for this quota."
    )


def test_the_cluster_usage_quota_counts_every_hyperpod_cluster_of_the_account(account, make_account, sandbox):
    eks = eks_cluster(account)
    limit = account.service_quotas.list_service_quotas(ServiceCode="sagemaker")["Quotas"]
    p5 = next(q for q in limit if q["QuotaName"] == "ml.p5.48xlarge for cluster usage")
    assert p5["Value"] == 4
    hyperpod(account, "first", eks, [group(count=4, itype="ml.p5.48xlarge")])
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="first")["ClusterStatus"] == "InService")

    error = refused(hyperpod, account, "second", eks, [group(count=2, itype="ml.p5.48xlarge")])
    assert error["Code"] == "ResourceLimitExceeded"
    assert error["Message"] == quota_message("ml.p5.48xlarge", 4, 4, 2)
    error = refused(update_group, account, "first", count=5, itype="ml.p5.48xlarge")
    assert error["Message"] == quota_message("ml.p5.48xlarge", 4, 4, 1)
    assert account.sagemaker.describe_cluster(ClusterName="first")["InstanceGroups"][0]["TargetCount"] == 4
    assert [c["ClusterName"] for c in account.sagemaker.list_clusters()["ClusterSummaries"]] == ["first"]

    # other types, and other accounts, have quotas of their own
    hyperpod(account, "other-type", eks, [group(count=2, itype="ml.g5.xlarge")])
    other = make_account()
    hyperpod(other, "theirs", eks_cluster(other), [group(count=4, itype="ml.p5.48xlarge")])

    # a raised quota lets the request through
    request = urllib.request.Request(
        f"{sandbox.aws_endpoint}/_sandbox/quotas",
        data=json.dumps(
            {"account": account.id, "service": "sagemaker", "quota_code": p5["QuotaCode"], "value": 6}
        ).encode(),
        method="POST",
    )
    urllib.request.urlopen(request, timeout=5).close()
    hyperpod(account, "third", eks, [group(count=2, itype="ml.p5.48xlarge")])
