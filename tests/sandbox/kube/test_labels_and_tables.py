"""What a real API server refuses (label keys and values, taints) with its 422 words, and what
`kubectl get` prints for nodes, volumes and claims."""

from __future__ import annotations

import json

import pytest
from kubernetes.client import ApiException

from tests.sandbox.kube.conftest import Kube, deployment, wait_for

NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def invalid(fn, *args) -> dict:
    with pytest.raises(ApiException) as e:
        fn(*args)
    assert e.value.status == 422
    body = json.loads(e.value.body)
    assert body["reason"] == "Invalid"
    return body


def test_invalid_label_keys_values_and_taints_are_refused_with_the_api_servers_message(kube: Kube) -> None:
    body = invalid(
        kube.core.create_namespaced_config_map,
        "default",
        {"metadata": {"name": "cm", "labels": {"bad key!": "v"}}},
    )
    assert body["message"] == f'ConfigMap "cm" is invalid: metadata.labels: Invalid value: "bad key!": {NAME_PART}'
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "bad key!": {NAME_PART}',
            "field": "metadata.labels",
        }
    ]
    body = invalid(
        kube.core.create_namespaced_config_map,
        "default",
        {"metadata": {"name": "cm", "labels": {"example.com/team": "-x-", "Example.com/a": "b"}}},
    )
    assert "a valid label must be an empty string" in body["message"]
    assert 'Invalid value: "Example.com/a": prefix part a lowercase RFC 1123 subdomain' in body["message"]

    bad_template = deployment("web")
    bad_template["spec"]["template"]["metadata"]["labels"]["bad key!"] = "v"
    body = invalid(kube.apps.create_namespaced_deployment, "default", bad_template)
    assert 'spec.template.metadata.labels: Invalid value: "bad key!"' in body["message"]

    node = kube.core.list_node().items[0].metadata.name
    body = invalid(
        kube.core.patch_node, node, {"spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "Sometimes"}]}}
    )
    assert body["message"] == (
        f'Node "{node}" is invalid: spec.taints[0].effect: Unsupported value: "Sometimes": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"'
    )
    body = invalid(kube.core.patch_node, node, {"metadata": {"labels": {"a/b/c": "x"}}})
    assert "a qualified name must consist of alphanumeric characters" in body["message"]
    assert "cm" not in {c.metadata.name for c in kube.core.list_namespaced_config_map("default").items}
    assert not (kube.core.read_node(node).spec.taints or [])  # nothing was stored


def rows(kube: Kube, *args: str) -> list[list[str]]:
    out = kube.kubectl("get", *args).stdout.splitlines()
    header = [c for c in out[0].split("  ") if c.strip()]
    return [[c.strip() for c in header]] + [line.split() for line in out[1:]]


def test_kubectl_get_shows_the_columns_of_a_real_api_server(kube: Kube, kubectl_bin: str) -> None:
    wide = rows(kube, "nodes", "-o", "wide")
    assert wide[0] == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    node = kube.core.list_node().items[0]
    ip = next(a.address for a in node.status.addresses if a.type == "InternalIP")
    assert any(r[0] == node.metadata.name and ip in r and "<none>" in r and "containerd://1.7.23" in r for r in wide)

    kube.core.create_persistent_volume(
        {
            "metadata": {"name": "team-shared"},
            "spec": {
                "capacity": {"storage": "1200Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": "default", "name": "shared"},
                "csi": {"driver": "s3.csi.aws.com", "volumeHandle": "s3-csi-bucket"},
            },
        }
    )
    kube.core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "shared"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": "team-shared",
                "resources": {"requests": {"storage": "1200Gi"}},
            },
        },
    )
    kube.core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "scratch"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}},
        },
    )
    wait_for(lambda: kube.core.read_namespaced_persistent_volume_claim("shared", "default").status.phase == "Bound")
    pv = rows(kube, "pv")
    assert pv[0] == [
        "NAME",
        "CAPACITY",
        "ACCESS MODES",
        "RECLAIM POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "REASON",
        "AGE",
    ]
    assert pv[1][:6] == ["team-shared", "1200Gi", "RWX", "Retain", "Bound", "default/shared"]
    assert pv[1][6] == "<unset>"  # no storage class and no reason: empty cells
    pvc = rows(kube, "pvc")
    assert pvc[0] == [
        "NAME",
        "STATUS",
        "VOLUME",
        "CAPACITY",
        "ACCESS MODES",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "AGE",
    ]
    by_name = {r[0]: r for r in pvc[1:]}
    assert by_name["shared"][:5] == ["shared", "Bound", "team-shared", "1200Gi", "RWX"]
    assert rows(kube, "storageclass")[1][:5] == [
        "gp2",
        "(default)",
        "kubernetes.io/aws-ebs",
        "Delete",
        "WaitForFirstConsumer",
    ]
    # a claim of the default class waits for its first consumer (gp2 is WaitForFirstConsumer)
    assert by_name["scratch"][:3] == ["scratch", "Pending", "gp2"]
    events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=scratch").items
    assert [e.reason for e in events] == ["WaitForFirstConsumer"]

    consumer = deployment("app")
    consumer["spec"]["template"]["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "scratch"}}]
    kube.apps.create_namespaced_deployment("default", consumer)
    claim = wait_for(
        lambda: (
            (c := kube.core.read_namespaced_persistent_volume_claim("scratch", "default")).status.phase == "Bound" and c
        )
    )
    volume = kube.core.read_persistent_volume(claim.spec.volume_name)
    assert volume.metadata.name == f"pvc-{claim.metadata.uid}" and volume.spec.storage_class_name == "gp2"
    assert volume.spec.claim_ref.uid == claim.metadata.uid and volume.spec.persistent_volume_reclaim_policy == "Delete"

    # the claim goes: a provisioned (Delete) volume goes with it, a Retain volume is Released
    kube.apps.delete_namespaced_deployment("app", "default")
    kube.core.delete_namespaced_persistent_volume_claim("scratch", "default")
    kube.core.delete_namespaced_persistent_volume_claim("shared", "default")
    wait_for(lambda: [v.metadata.name for v in kube.core.list_persistent_volume().items] == ["team-shared"])
    wait_for(lambda: kube.core.read_persistent_volume("team-shared").status.phase == "Released")
