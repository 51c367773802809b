"""A secret scan: every GET endpoint of the schema, as each role (viewer, member, admin), against a
real cluster in the sandbox — no answer carries a token, a token hash, a kubeconfig, the team's
external ID or AWS credentials. (MCP read-only tools dispatch into these same GETs.)"""

from __future__ import annotations

import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from clusters.models import Cluster
from instantstart.cloud.aws import team_cloud
from instantstart.operations.models import AuditEvent, Operation
from instantstart.tenancy.models import ApiToken, Membership
from tests.clusters.helpers import cluster_body, wait_for_operation

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

EXTERNAL_ID = "ext-Zq9-secret-4711"
KUBECONFIG_MARKS = (
    "certificate-authority-data",
    "client-certificate-data",
    "client-key-data",
    "kind: Config",
    "BEGIN CERTIFICATE",
    "PRIVATE KEY",
    "k8s-aws-v1.",
)
AWS_MARKS = ("SecretAccessKey", "aws_secret_access_key", "SessionToken", "aws_session_token")
FULL_TOKEN = re.compile(r"ist_[A-Za-z0-9_-]{20,}")


def get_paths() -> list[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [path for path, methods in schema["paths"].items() if "get" in methods]


# Objects this scan does not create (approvals, jobs, endpoints, models: their own apps' tests read them)
# are asked for by an id that names nothing: their 404 answers are scanned like any other.
MISSING_ID = "00000000-0000-4000-8000-000000000000"


def fill(path: str, ids: dict[str, str]) -> str:
    """The path with real ids: ``{id}`` is the object of the collection it follows."""
    for name in re.findall(r"{(\w+)}", path):
        if name == "id":
            found = [value for prefix, value in ids.items() if prefix.startswith("/") and path.startswith(prefix)]
            value = found[0] if found else MISSING_ID
        else:
            value = ids.get(name, MISSING_ID)
        path = path.replace("{" + name + "}", value)
    return path


def test_no_get_answer_carries_a_secret_for_any_role(admin_api, member_api, viewer_api, team, start_worker):
    assert admin_api.patch("/api/v1/team/", {"aws_external_id": EXTERNAL_ID}, format="json").status_code == 200
    start_worker()
    created = admin_api.post("/api/v1/clusters/", cluster_body("scan"), format="json").json()
    wait_for_operation(created["operation"]["id"])
    cluster = Cluster.objects.get(pk=created["cluster"]["id"])
    nodes = admin_api.get(f"/api/v1/clusters/{cluster.pk}/nodes/").json()["results"]
    new_token = admin_api.post("/api/v1/tokens/", {"name": "shown-once"}, format="json").json()["token"]

    ids = {
        "/api/v1/clusters/{cluster_pk}/storage/": str(cluster.storages.first().pk),
        "/api/v1/clusters/": str(cluster.pk),
        "/api/v1/operations/": str(Operation.objects.filter(team=team).first().pk),
        "/api/v1/audit-events/": str(AuditEvent.objects.filter(team=team).first().pk),
        "/api/v1/tokens/": str(ApiToken.objects.filter(team=team).first().pk),
        "/api/v1/team/members/": str(Membership.objects.filter(team=team).first().pk),
        "cluster_pk": str(cluster.pk),
        "name": cluster.instance_groups.first().name,
        "node": nodes[0]["name"],
    }
    team.refresh_from_db()  # the external ID set above
    credentials = team_cloud(team, "us-west-2").credentials
    secrets = [
        EXTERNAL_ID,
        new_token,
        credentials["SecretAccessKey"],
        credentials["SessionToken"],
        *ApiToken.objects.values_list("token_hash", flat=True),
    ]
    scanned = 0
    for role, api in (("viewer", viewer_api), ("member", member_api), ("admin", admin_api)):
        for template in get_paths():
            path = fill(template, ids)
            query = (
                {"region": "us-west-2"}
                if "{" not in template
                and template.endswith(("availability-zones/", "instance-types/", "training-plans/", "importable/"))
                else {}
            )
            response = api.get(path, query)
            assert response.status_code < 500, (role, path, response.content[:300])
            text = response.content.decode()
            scanned += 1
            for secret in secrets:
                assert secret not in text, (role, path, "a secret value")
            for mark in (*KUBECONFIG_MARKS, *AWS_MARKS):
                assert mark not in text, (role, path, mark)
            assert not FULL_TOKEN.search(text), (role, path, "a full API token")
    assert scanned == 3 * len(get_paths())
