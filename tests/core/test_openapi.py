"""The OpenAPI document describes the real bodies: every JSON 2xx names its typed envelope."""

from __future__ import annotations

from typing import Any

import pytest

from hub.app import create_app
from tests.conftest import make_settings

#: Routes whose 2xx is not an envelope: Prometheus text, the OAuth callback's HTML page, a bare
#: document others read (an OAuth client ID metadata document), the agents' MCP endpoint
#: (JSON-RPC).
UNTYPED = {
    ("get", "/metrics"),
    ("get", "/oauth/callback"),
    ("get", "/oauth/client-metadata.json"),
    ("post", "/tenants/{t}/deployments/{d}/mcp"),
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


#: answered without an API key: no 401/403 to document (the OAuth callback is a browser page)
PUBLIC = {"/healthz", "/readyz", "/metrics", "/oauth/callback", "/oauth/client-metadata.json"}
#: not the REST error body: MCP endpoints answer JSON-RPC messages, the callback a browser page
OWN_ERROR_BODIES = {"/tenants/{t}/deployments/{d}/mcp", "/oauth/callback"}
READ_ONLY_POSTS = {("post", "/tenants/{t}/grants/check")}
UPSTREAM = {
    ("post", "/tenants/{t}/mcp/discover"),
    ("post", "/tenants/{t}/servers"),
    ("patch", "/tenants/{t}/servers/{handle}"),
    ("post", "/tenants/{t}/servers/{handle}/catalogs"),
}
#: conditional writes (``If-Match``): 412 when the version read is no longer current
CONDITIONAL = {("patch", "/tenants/{t}/deployments/{d}")}
#: routes that read their body themselves (no body model for FastAPI to document)
OWN_BODIES = {("post", "/tenants/{t}/deployments/{d}/mcp")}
#: responses whose ETag a conditional request names (If-Match, If-None-Match)
TAGGED = {
    ("get", "/tenants/{t}/deployments/{d}", "200"),
    ("patch", "/tenants/{t}/deployments/{d}", "200"),
    ("get", "/tenants/{t}/deployments/{d}/bundle", "200"),
    ("get", "/tenants/{t}/deployments/{d}/bundle", "304"),
}


def _expected_errors(method: str, path: str, operation: dict[str, Any]) -> set[str]:
    if path in PUBLIC:
        return set()
    expected = {"401", "503"}
    if path != "/whoami":
        expected.add("403")
    if "{" in path:
        expected.add("404")
    if method in ("post", "patch", "delete") and (method, path) not in READ_ONLY_POSTS:
        expected.add("409")
    if "requestBody" in operation or (method, path) in OWN_BODIES:
        expected.add("413")
    if "requestBody" in operation and (method, path) not in OWN_BODIES:
        expected.add("415")  # a JSON body that is not UTF-8 as it is
    if (method, path) in UPSTREAM:
        expected.add("422")
    if (method, path) in CONDITIONAL:
        expected.add("412")
    return expected


def test_every_error_status_a_route_answers_is_documented(document: dict[str, Any]) -> None:
    missing = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            for status in sorted(_expected_errors(method, path, operation) - set(responses)):
                missing.append(f"{method.upper()} {path} {status}")
            if (method, path) in OWN_BODIES and "requestBody" not in operation:
                missing.append(f"{method.upper()} {path} requestBody")
    assert missing == [], "\n".join(missing)


def test_only_the_public_routes_need_no_key(document: dict[str, Any]) -> None:
    """The document's ``security`` (a key, either way) holds but where none is asked for."""
    assert document["security"] == [{"bearer": []}, {"apiKey": []}]
    keyless = {
        path
        for path, item in document["paths"].items()
        for operation in item.values()
        if operation.get("security") == []
    }
    assert keyless == PUBLIC


def test_the_etag_a_condition_names_is_documented(document: dict[str, Any]) -> None:
    for method, path, status in TAGGED:
        headers = document["paths"][path][method]["responses"][status].get("headers", {})
        assert headers.get("ETag", {}).get("schema") == {"type": "string"}, (method, path, status)


def test_every_documented_error_has_the_error_schema(document: dict[str, Any]) -> None:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400 and path not in OWN_ERROR_BODIES:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (
                        method,
                        path,
                        status,
                    )
