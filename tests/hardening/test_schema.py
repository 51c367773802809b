"""The OpenAPI document says what the API really answers and takes: the error answers of every
operation in the one error shape, JSON bodies only, closed request bodies, region/zone/type hints."""

from __future__ import annotations

from rest_framework.test import APIClient


def test_every_operation_documents_its_errors_and_takes_only_json(db):
    schema = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            for code in ("400", "401", "403", "404", "409", "422"):
                ref = responses[code]["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/Error", (method, path, code)
            if "requestBody" in operation:
                content = set(operation["requestBody"]["content"])
                if path.endswith("/files/") and method == "post":  # the one file upload: multipart only
                    assert content == {"multipart/form-data"}, (method, path)
                else:
                    assert content == {"application/json"}, (method, path)
                assert {"413", "415"} <= responses.keys()


def test_request_bodies_are_closed_and_region_zone_and_type_are_described(db):
    schemas = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    create = schemas["ClusterCreateRequest"]
    assert create["additionalProperties"] is False
    assert "us-west-2" in schemas["RegionEnum"]["enum"]
    assert create["properties"]["availability_zone"]["example"] == "us-west-2a"
    group = schemas["InstanceGroupRequestRequest"]
    assert group["additionalProperties"] is False
    assert group["properties"]["instance_type"]["example"] == "ml.g5.xlarge"
    assert {"labels", "taints", "ebs_volume_gb", "min_count"} <= group["properties"].keys()
    assert group["properties"]["ebs_volume_gb"]["maximum"] == 16384
