"""The EKS add-ons behind the managed features: what DescribeAddonVersions / DescribeAddonConfiguration
know, configuration values checked against the add-on's schema, the dependencies AWS enforces, what
each add-on runs in the cluster (ready Deployments, CRDs served only while it runs), the failure
faults of the retry paths, add-on-owned pod identity associations, and delete-addon --preserve."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.sandbox.conftest import control, eks_cluster, hyperpod, kube_client, role, wait_for

TRAINING = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE = "amazon-sagemaker-hyperpod-inference"
HPJ = ("sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs")


def _status(acct, cluster: str, addon: str) -> dict[str, Any]:
    return acct.eks.describe_addon(clusterName=cluster, addonName=addon)["addon"]


def _settled(acct, cluster: str, addon: str) -> dict[str, Any]:
    return wait_for(lambda: (a := _status(acct, cluster, addon))["status"] not in ("CREATING", "UPDATING") and a)


def _gone(acct, cluster: str, addon: str) -> None:
    wait_for(lambda: addon not in acct.eks.list_addons(clusterName=cluster)["addons"])


def _hpjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "replicaSpecs": [
                {"name": "pod", "replicas": 1, "template": {"spec": {"containers": [{"name": "t", "image": "x"}]}}}
            ]
        },
    }


@pytest.fixture
def cluster(account, sandbox) -> tuple[dict[str, Any], client.ApiClient]:
    """An EKS cluster with one HyperPod CPU node, so that add-on pods have somewhere to run."""
    eks = eks_cluster(account, "ml")
    hyperpod(
        account, "hp", eks, groups=[{"InstanceGroupName": "cpu", "InstanceType": "ml.m5.2xlarge", "InstanceCount": 1}]
    )
    wait_for(lambda: account.sagemaker.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService")
    api = kube_client(account, eks)
    wait_for(lambda: client.CoreV1Api(api).list_node().items)
    return eks, api


def test_catalog_knows_every_feature_addon_and_its_identity(account):
    eks_cluster(account, "ml")
    addons = {a["addonName"]: a for a in account.eks.describe_addon_versions(kubernetesVersion="1.32")["addons"]}
    assert {
        "cert-manager",
        "eks-pod-identity-agent",
        "aws-mountpoint-s3-csi-driver",
        "aws-fsx-csi-driver",
        "metrics-server",
        TRAINING,
        INFERENCE,
        "amazon-sagemaker-hyperpod-observability",
        "amazon-cloudwatch-observability",
    } <= set(addons)
    assert "amazon-sagemaker-hyperpod-inference-operator" not in addons
    assert addons[INFERENCE]["defaultNamespace"] == "hyperpod-inference-system"
    assert addons[INFERENCE]["addonVersions"][0]["requiresConfiguration"] is True
    training = {v["addonVersion"]: v for v in addons[TRAINING]["addonVersions"]}
    assert addons[TRAINING]["addonVersions"][0]["addonVersion"] == "v1.2.1-eksbuild.1"  # the default
    assert training["v1.2.1-eksbuild.1"]["requiresIamPermissions"] is False
    assert training["v1.2.0-eksbuild.1"]["requiresIamPermissions"] is True
    conf = account.eks.describe_addon_configuration(addonName=TRAINING, addonVersion="v1.2.0-eksbuild.1")
    assert conf["podIdentityConfiguration"] == [
        {
            "serviceAccount": "hp-training-operator-controller-manager",
            "recommendedManagedPolicies": ["arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess"],
        }
    ]
    schema = json.loads(
        account.eks.describe_addon_configuration(addonName=INFERENCE, addonVersion="v1.0.0-eksbuild.1")[
            "configurationSchema"
        ]
    )
    assert set(schema["required"]) == {"executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn"}
    assert {"alb", "keda", "jumpstartGatedModelDownloadRoleArn"} <= set(schema["properties"])
    with pytest.raises(ClientError) as e:
        account.eks.describe_addon_configuration(addonName="nope", addonVersion="v1")
    assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as e:
        account.eks.describe_addon_configuration(addonName=TRAINING, addonVersion="v9.9.9-eksbuild.1")
    assert e.value.response["Error"]["Code"] == "InvalidParameterException"


def test_configuration_values_are_checked_against_the_schema(account):
    eks_cluster(account, "ml")
    good = {"replicaCount": 1, "webhook": {"replicaCount": 1}, "cainjector": {"replicaCount": 1}}
    account.eks.create_addon(clusterName="ml", addonName="cert-manager", configurationValues=json.dumps(good))
    for values, fragment in (
        ('{"replicas": 2}', "$.replicas: is not defined in the schema"),
        ("{not json", "not in valid JSON or YAML format"),
    ):
        with pytest.raises(ClientError) as e:
            account.eks.create_addon(clusterName="ml", addonName="metrics-server", configurationValues=values)
        assert e.value.response["Error"]["Code"] == "InvalidParameterException"
        assert fragment in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:  # the inference add-on cannot run without its configuration
        account.eks.create_addon(clusterName="ml", addonName=INFERENCE)
    assert "executionRoleArn" in e.value.response["Error"]["Message"]
    assert "metrics-server" not in account.eks.list_addons(clusterName="ml")["addons"]  # refused = nothing created
    assert _settled(account, "ml", "cert-manager")["configurationValues"] == json.dumps(good)
    with pytest.raises(ClientError) as e:
        account.eks.update_addon(clusterName="ml", addonName="cert-manager", configurationValues='{"bogus": true}')
    assert e.value.response["Error"]["Code"] == "InvalidParameterException"
    assert _status(account, "ml", "cert-manager")["status"] == "ACTIVE"  # refused = unchanged


def test_training_operator_runs_only_with_cert_manager_and_its_crd_only_while_it_runs(account, cluster):
    _eks, api = cluster
    custom, apps = client.CustomObjectsApi(api), client.AppsV1Api(api)
    with pytest.raises(ApiException) as e:  # before the feature: the real 404
        custom.create_namespaced_custom_object(*HPJ, _hpjob("early"))
    assert e.value.status == 404
    assert json.loads(e.value.body)["message"] == "the server could not find the requested resource"

    account.eks.create_addon(clusterName="ml", addonName=TRAINING)
    failed = _settled(account, "ml", TRAINING)
    assert failed["status"] == "CREATE_FAILED"
    issue = failed["health"]["issues"][0]
    assert issue["code"] == "K8sResourceNotFound" and "cert-manager" in issue["message"]
    account.eks.delete_addon(clusterName="ml", addonName=TRAINING)
    _gone(account, "ml", TRAINING)

    for name in ("cert-manager", "eks-pod-identity-agent", TRAINING):  # at once: the operator waits for cert-manager
        account.eks.create_addon(clusterName="ml", addonName=name)
    assert _settled(account, "ml", TRAINING)["status"] == "ACTIVE"
    wait_for(
        lambda: (
            (
                apps.read_namespaced_deployment(
                    "hp-training-operator-controller-manager", "aws-hyperpod"
                ).status.ready_replicas
                or 0
            )
            >= 1
        )
    )
    for d in ("cert-manager", "cert-manager-webhook", "cert-manager-cainjector"):
        wait_for(lambda d=d: (apps.read_namespaced_deployment(d, "cert-manager").status.ready_replicas or 0) >= 1)
    wait_for(lambda: client.AppsV1Api(api).read_namespaced_daemon_set("eks-pod-identity-agent", "kube-system"))
    custom.create_namespaced_custom_object(*HPJ, _hpjob("run"))

    # cert-manager taken away under the operator: DEGRADED with the health issue; back: ACTIVE
    account.eks.delete_addon(clusterName="ml", addonName="cert-manager")
    degraded = wait_for(lambda: (a := _status(account, "ml", TRAINING))["status"] == "DEGRADED" and a)
    assert degraded["health"]["issues"][0]["code"] == "K8sResourceNotFound"
    account.eks.create_addon(clusterName="ml", addonName="cert-manager")
    wait_for(lambda: _status(account, "ml", TRAINING)["status"] == "ACTIVE")

    account.eks.delete_addon(clusterName="ml", addonName=TRAINING)
    _gone(account, "ml", TRAINING)

    def crd_gone() -> bool:
        try:
            custom.list_namespaced_custom_object(*HPJ)
        except ApiException as e:
            return e.status == 404
        return False

    wait_for(crd_gone)
    wait_for(lambda: not apps.list_namespaced_deployment("aws-hyperpod").items)


def test_inference_addon_needs_csi_drivers_cert_manager_and_metrics_server(account, cluster, sandbox):
    _eks, api = cluster
    hp_arn = account.sagemaker.describe_cluster(ClusterName="hp")["ClusterArn"]
    config = json.dumps(
        {
            "executionRoleArn": role(account, "inference-exec"),
            "tlsCertificateS3Bucket": "hyperpod-tls-123",
            "hyperpodClusterArn": hp_arn,
            "alb": {"enabled": False},
        }
    )
    iec = ("inference.sagemaker.aws.amazon.com", "v1", "default", "inferenceendpointconfigs")
    with pytest.raises(ApiException) as e:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            *iec,
            {
                "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
                "kind": "InferenceEndpointConfig",
                "metadata": {"name": "x"},
                "spec": {},
            },
        )
    assert e.value.status == 404
    account.eks.create_addon(clusterName="ml", addonName=INFERENCE, configurationValues=config)
    failed = _settled(account, "ml", INFERENCE)
    assert failed["status"] == "CREATE_FAILED"
    messages = " ".join(i["message"] for i in failed["health"]["issues"])
    for needed in ("s3.csi.aws.com", "fsx.csi.aws.com", "cert-manager", "metrics-server"):
        assert needed in messages
    account.eks.delete_addon(clusterName="ml", addonName=INFERENCE)
    _gone(account, "ml", INFERENCE)

    for name in ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "cert-manager", "metrics-server"):
        account.eks.create_addon(clusterName="ml", addonName=name)
    for name in ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "cert-manager", "metrics-server"):
        assert _settled(account, "ml", name)["status"] == "ACTIVE"
    account.eks.create_addon(clusterName="ml", addonName=INFERENCE, configurationValues=config)
    assert _settled(account, "ml", INFERENCE)["status"] == "ACTIVE"
    storage = client.StorageV1Api(api)
    assert {d.metadata.name for d in storage.list_csi_driver().items} >= {"s3.csi.aws.com", "fsx.csi.aws.com"}
    apps = client.AppsV1Api(api)
    names = wait_for(
        lambda: (
            {
                d.metadata.name
                for d in apps.list_namespaced_deployment("hyperpod-inference-system").items
                if (d.status.ready_replicas or 0) >= 1
            }
            >= {"hyperpod-inference-controller-manager", "keda-operator"}
            and {d.metadata.name for d in apps.list_namespaced_deployment("hyperpod-inference-system").items}
        )
    )
    assert "hyperpod-inference-alb" not in names  # alb.enabled: false
    ext = client.ApiextensionsV1Api(api)
    crds = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    assert {"inferenceendpointconfigs.inference.sagemaker.aws.amazon.com", "scaledobjects.keda.sh"} <= crds


def test_create_failed_and_degraded_faults_and_their_retry_paths(account, sandbox):
    eks_cluster(account, "ml")
    control(sandbox, "POST", "faults", {"kind": "addon_create_failed", "addon": "cert-manager"})
    account.eks.create_addon(clusterName="ml", addonName="cert-manager")
    failed = _settled(account, "ml", "cert-manager")
    assert failed["status"] == "CREATE_FAILED"
    assert failed["health"]["issues"][0]["code"] == "ConfigurationConflict"
    assert set(failed["health"]["issues"][0]) == {"code", "message", "resourceIds"}
    account.eks.delete_addon(clusterName="ml", addonName="cert-manager")  # the retry: delete, create again
    _gone(account, "ml", "cert-manager")
    account.eks.create_addon(clusterName="ml", addonName="cert-manager")
    assert _settled(account, "ml", "cert-manager")["status"] == "ACTIVE"

    control(sandbox, "POST", "faults", {"kind": "addon_degraded", "addon": "metrics-server", "cluster": "ml"})
    account.eks.create_addon(clusterName="ml", addonName="metrics-server")
    degraded = wait_for(lambda: (a := _status(account, "ml", "metrics-server"))["status"] == "DEGRADED" and a)
    assert degraded["health"]["issues"] == [
        {
            "code": "InsufficientNumberOfReplicas",
            "message": "The add-on is unhealthy because it doesn't have the desired number of replicas.",
            "resourceIds": [],
        }
    ]
    up = account.eks.update_addon(clusterName="ml", addonName="metrics-server", resolveConflicts="OVERWRITE")
    assert up["update"]["type"] == "AddonUpdate"
    assert _settled(account, "ml", "metrics-server")["status"] == "ACTIVE"
    assert _status(account, "ml", "metrics-server")["health"] == {"issues": []}
    assert control(sandbox, "GET", "faults")["faults"] == []  # both consumed once


def test_addon_owned_pod_identity_associations_go_with_the_addon_only(account):
    eks_cluster(account, "ml")
    operator_role = role(account, "hpto")
    with pytest.raises(ClientError) as e:  # the default version takes no inline pod identity
        account.eks.create_addon(
            clusterName="ml",
            addonName=TRAINING,
            podIdentityAssociations=[
                {"serviceAccount": "hp-training-operator-controller-manager", "roleArn": operator_role}
            ],
        )
    assert e.value.response["Error"]["Message"] == (
        "Pod Identity feature is not supported for addon version: v1.2.1-eksbuild.1"
    )
    with pytest.raises(ClientError) as e:
        account.eks.create_addon(
            clusterName="ml",
            addonName=TRAINING,
            addonVersion="v1.2.0-eksbuild.1",
            podIdentityAssociations=[{"serviceAccount": "someone-else", "roleArn": operator_role}],
        )
    assert e.value.response["Error"]["Code"] == "InvalidParameterException"
    assert account.eks.list_pod_identity_associations(clusterName="ml")["associations"] == []

    account.eks.create_addon(
        clusterName="ml",
        addonName=TRAINING,
        addonVersion="v1.2.0-eksbuild.1",
        podIdentityAssociations=[
            {"serviceAccount": "hp-training-operator-controller-manager", "roleArn": operator_role}
        ],
    )
    standalone = account.eks.create_pod_identity_association(
        clusterName="ml",
        namespace="aws-hyperpod",
        serviceAccount="checkpoint-writer",
        roleArn=role(account, "ckpt"),
        tags={"instantstart:feature": "tiered_checkpointing"},
    )["association"]
    # what a cleanup check reads: the tags of the association and of the add-on
    assert account.eks.list_tags_for_resource(resourceArn=standalone["associationArn"])["tags"] == {
        "instantstart:feature": "tiered_checkpointing"
    }
    addon_arn = _status(account, "ml", TRAINING)["addonArn"]
    account.eks.tag_resource(resourceArn=addon_arn, tags={"instantstart:feature": "training_operator"})
    assert account.eks.list_tags_for_resource(resourceArn=addon_arn)["tags"] == {
        "instantstart:feature": "training_operator"
    }
    account.eks.untag_resource(resourceArn=addon_arn, tagKeys=["instantstart:feature"])
    assert _status(account, "ml", TRAINING)["tags"] == {}
    owned = account.eks.list_pod_identity_associations(
        clusterName="ml", namespace="aws-hyperpod", serviceAccount="hp-training-operator-controller-manager"
    )["associations"]
    assert len(owned) == 1 and owned[0]["ownerArn"] == _status(account, "ml", TRAINING)["addonArn"]
    assert _status(account, "ml", TRAINING)["podIdentityAssociations"] == [owned[0]["associationArn"]]
    in_namespace = account.eks.list_pod_identity_associations(clusterName="ml", namespace="aws-hyperpod")
    assert {a["serviceAccount"] for a in in_namespace["associations"]} == {
        "hp-training-operator-controller-manager",
        "checkpoint-writer",
    }
    assert account.eks.list_pod_identity_associations(clusterName="ml", namespace="default")["associations"] == []
    with pytest.raises(ClientError) as e:
        account.eks.delete_pod_identity_association(clusterName="ml", associationId=owned[0]["associationId"])
    assert e.value.response["Error"]["Code"] == "InvalidRequestException"

    account.eks.delete_addon(clusterName="ml", addonName=TRAINING)
    left = account.eks.list_pod_identity_associations(clusterName="ml")["associations"]
    assert [a["associationId"] for a in left] == [standalone["associationId"]]


def test_delete_with_preserve_keeps_the_software_running(account, cluster):
    _eks, api = cluster
    account.eks.create_addon(clusterName="ml", addonName="cert-manager")
    assert _settled(account, "ml", "cert-manager")["status"] == "ACTIVE"
    ext = client.ApiextensionsV1Api(api)
    wait_for(
        lambda: "certificates.cert-manager.io" in {c.metadata.name for c in ext.list_custom_resource_definition().items}
    )
    account.eks.delete_addon(clusterName="ml", addonName="cert-manager", preserve=True)
    _gone(account, "ml", "cert-manager")
    assert client.AppsV1Api(api).read_namespaced_deployment("cert-manager", "cert-manager")
    assert "certificates.cert-manager.io" in {c.metadata.name for c in ext.list_custom_resource_definition().items}
    # what runs in the cluster is what counts: the training operator finds cert-manager
    account.eks.create_addon(clusterName="ml", addonName=TRAINING)
    assert _settled(account, "ml", TRAINING)["status"] == "ACTIVE"
