"""The OpenAPI schema is served and valid, and documents how to authenticate."""

from __future__ import annotations

import pytest
from django.test import Client
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db


def test_the_schema_is_served_to_anyone_and_is_valid_openapi():
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert schema["openapi"].startswith("3.")
    assert set(schema["components"]["securitySchemes"]) == {"TokenAuth", "SessionAuth"}
    assert schema["components"]["securitySchemes"]["TokenAuth"] == {
        "type": "http", "scheme": "bearer"}


def test_every_operation_requires_authentication_and_documents_errors():
    schema = Client().get("/api/openapi.json").json()
    ids = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert operation["security"] == [{"TokenAuth": []}, {"SessionAuth": []}], where
            assert {"401", "404"} <= set(operation["responses"]), where
            ids.append(operation["operationId"])
    assert len(ids) == len(set(ids))
    assert "export_markdown" in ids


def test_the_exports_are_documented_with_their_media_types():
    paths = Client().get("/api/openapi.json").json()["paths"]
    as_json = paths["/api/conversations/{conversation_id}/export.json"]["get"]["responses"]
    as_md = paths["/api/conversations/{conversation_id}/export.md"]["get"]["responses"]
    assert as_json["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/TranscriptOut"}
    assert list(as_md["200"]["content"]) == ["text/markdown"]
