"""The OpenAPI document describes the real bodies: every JSON 2xx names its typed envelope."""

from __future__ import annotations

from typing import Any

import pytest

from hub.app import create_app
from tests.conftest import make_settings

#: Routes whose 2xx is not JSON (Prometheus text, NDJSON exports) or carries no body.
UNTYPED = {
    ("get", "/metrics"),
    ("get", "/tenants/{t}/audit/export"),
    ("get", "/platform/audit/export"),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(make_settings()).openapi()


def _success_schemas(document: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                found.append((method, path, status, schema))
    return found


def test_every_json_success_body_is_a_typed_envelope(document: dict[str, Any]) -> None:
    untyped = [
        f"{method.upper()} {path} {status}"
        for method, path, status, schema in _success_schemas(document)
        if (method, path) not in UNTYPED
        and not (isinstance(schema, dict) and schema.get("$ref", "").count("Envelope"))
    ]
    assert untyped == []


def test_read_schemas_are_components(document: dict[str, Any]) -> None:
    names = set(document["components"]["schemas"])
    for read in (
        "TenantRead",
        "PrincipalRead",
        "KeyRead",
        "KeyCreated",
        "GrantRead",
        "CredentialRead",
        "ServerRead",
        "CatalogRead",
        "CatalogSummary",
        "CatalogDiffRead",
        "DeploymentRead",
        "BundleRead",
        "WhoAmI",
        "AuditEventRead",
        "AuditVerifyRead",
    ):
        assert read in names


def test_no_fastapi_422_is_documented(document: dict[str, Any]) -> None:
    for item in document["paths"].values():
        for operation in item.values():
            assert "HTTPValidationError" not in str(operation["responses"].get("422", ""))
