"""Every bad request is a 4xx in the error shape, never a 500 or an HTML page: bodies that are not
objects, too deep or too large, unbounded limits and offsets, OPTIONS everywhere, unknown URLs."""

from __future__ import annotations

import pytest
from django.test import override_settings

from instantstart.api.middleware import is_error_shape
from tests.clusters.helpers import cluster_with_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(team):
    return cluster_with_group(team, name="fleet", hyperpod_cluster_name="fleet-hp")


def raw(api, method: str, path: str, body: str, content_type: str = "application/json"):
    return getattr(api, method)(path, data=body, content_type=content_type)


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    assert is_error_shape(response.content), response.content[:300]
    error = response.json()["error"]
    if code:
        assert error["code"] == code, error
    return error


@pytest.mark.parametrize("body", ["42", "true", "[{}]", "[[1]]", '"availability_zone"', "null"])
def test_a_body_that_is_not_a_json_object_is_a_400(admin_api, cluster, body):
    for path in (f"/api/v1/clusters/{cluster.pk}/", f"/api/v1/clusters/{cluster.pk}/instance-groups/workers/"):
        error = assert_error(raw(admin_api, "patch", path, body), 400, "parse_error")
        assert "must be a JSON object" in error["message"]


def test_a_deeply_nested_body_is_a_400_not_a_recursion_error(admin_api, cluster):
    for levels in (65, 5000, 100_000):
        body = '{"a":' * levels + "1" + "}" * levels
        error = assert_error(raw(admin_api, "post", "/api/v1/clusters/", body), 400, "parse_error")
        assert "deeper than 64" in error["message"]
    fine = '{"a":' * 10 + "1" + "}" * 10
    assert raw(admin_api, "post", "/api/v1/clusters/", fine).status_code == 400  # a field error, not depth
    assert "a" in raw(admin_api, "post", "/api/v1/clusters/", fine).json()["error"]["fields"]


def test_a_body_over_the_limit_is_a_json_413(admin_api):
    body = '{"name": "' + "x" * 3_000_000 + '"}'
    assert_error(raw(admin_api, "post", "/api/v1/clusters/", body), 413, "request_too_large")
    form = "name=" + "x" * 3_000_000
    response = raw(admin_api, "post", "/api/v1/clusters/", form, "application/x-www-form-urlencoded")
    assert response.status_code in (413, 415) and is_error_shape(response.content)


def test_only_json_bodies_are_taken(admin_api):
    response = raw(admin_api, "post", "/api/v1/clusters/", "name=x", "application/x-www-form-urlencoded")
    assert_error(response, 415, "unsupported_media_type")


def test_unknown_fields_are_refused_on_endpoints_whatever_their_serializer(admin_api, cluster):
    response = admin_api.post("/api/v1/tokens/", {"name": "ci", "role": "viewer", "colour": "red"}, format="json")
    assert assert_error(response, 400, "invalid")["fields"]["colour"] == ["Unknown field."]
    group = admin_api.post(f"/api/v1/clusters/{cluster.pk}/instance-groups/", {"colour": "red"}, format="json")
    assert assert_error(group, 400, "invalid")["fields"]["colour"] == ["Unknown field."]


def test_another_teams_cluster_is_a_404_whatever_the_body(outsider_api, cluster):
    base = f"/api/v1/clusters/{cluster.pk}"
    for method, path in [
        ("post", f"{base}/instance-groups/"),
        ("patch", f"{base}/instance-groups/workers/"),
        ("patch", f"{base}/"),
        ("post", f"{base}/nodes/n1/reboot/"),
        ("post", f"{base}/storage/"),
    ]:
        response = getattr(outsider_api, method)(path, {"colour": "red", "count": "x"}, format="json")
        assert_error(response, 404, "not_found")


@pytest.mark.parametrize(
    "query",
    [
        "limit=9223372036854775808",
        "limit=9223372036854775807",
        "limit=0",
        "limit=-1",
        "limit=x",
        "limit=501",
        "offset=9223372036854775808",
        "offset=-1",
        "offset=1e3",
        "offset=1000001",
    ],
)
def test_limit_and_offset_are_bounded_on_every_list(admin_api, cluster, query):
    for path in (
        "/api/v1/clusters/",
        "/api/v1/operations/",
        "/api/v1/audit-events/",
        "/api/v1/tokens/",
        f"/api/v1/clusters/{cluster.pk}/instance-groups/",
    ):
        name = query.split("=")[0]
        assert name in assert_error(admin_api.get(f"{path}?{query}"), 400, "invalid")["fields"]
    assert admin_api.get("/api/v1/clusters/?limit=500&offset=1000000").status_code == 200


def test_options_answers_on_every_endpoint_including_node_actions(admin_api, cluster):
    for action in ("reboot", "replace", "delete"):
        response = admin_api.options(f"/api/v1/clusters/{cluster.pk}/nodes/hyperpod-i-1/{action}/")
        assert response.status_code == 200, response.content[:300]
        assert response.json()["allowed_methods"] == ["OPTIONS", "POST"]
    assert admin_api.options("/api/v1/clusters/").status_code == 200


@pytest.mark.parametrize("debug", [False, True])
def test_api_errors_are_json_in_the_error_shape_in_every_mode(admin_api, anonymous_api, debug, settings):
    settings.DEBUG = debug
    assert_error(admin_api.get("/api/v1/no-such-thing/"), 404, "not_found")
    assert_error(admin_api.get("/api/v1/clusters/00000000-0000-0000-0000-000000000000/"), 404, "not_found")
    assert_error(admin_api.put("/api/v1/clusters/", {}, format="json"), 405, "method_not_allowed")
    assert_error(anonymous_api.get("/api/v1/clusters/"), 401)
    assert_error(admin_api.get("/api/v1/clusters/?limit=x"), 400, "invalid")


def test_an_unexpected_exception_is_a_json_500_in_every_mode(admin_api, monkeypatch, settings):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("clusters.api.clusters.ClusterViewSet.list", boom)
    for debug in (False, True):
        settings.DEBUG = debug
        with override_settings(DEBUG=debug):
            client = admin_api
            client.raise_request_exception = False
            error = assert_error(client.get("/api/v1/clusters/"), 500, "server_error")
            assert "boom" not in error["message"]


def test_a_value_of_another_json_type_than_documented_is_a_400(admin_api, cluster):
    response = admin_api.post("/api/v1/tokens/", {"name": 0, "role": "viewer"}, format="json")
    assert assert_error(response, 400, "invalid")["fields"]["name"] == ["Must be a string."]
    path = f"/api/v1/clusters/{cluster.pk}/instance-groups/workers/"
    assert assert_error(admin_api.patch(path, {"count": "3"}, format="json"), 400)["fields"]["count"] == [
        "Must be an integer."
    ]
    assert assert_error(admin_api.patch(path, {"count": True}, format="json"), 400)["fields"]["count"] == [
        "Must be an integer."
    ]


def test_an_undeclared_method_is_a_405_even_with_a_body(admin_api):
    response = admin_api.put("/api/v1/clusters/import/", {"name": "x"}, format="json")
    assert_error(response, 405, "method_not_allowed")
    assert "POST" in response["Allow"]


def test_an_import_name_eks_would_never_accept_is_a_400_not_a_cloud_error(admin_api, sandbox):
    body = {"name": "adopted", "region": "us-west-2", "eks_cluster_name": "a/b\x7f"}
    assert (
        "eks_cluster_name"
        in assert_error(admin_api.post("/api/v1/clusters/import/", body, format="json"), 400)["fields"]
    )
