"""The error body of DESIGN §4/§13 holds everywhere, with a request id and no echoed input."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from hub.app import create_app
from hub.core.db import Database
from hub.core.errors import Conflict
from tests.conftest import make_settings

CANARY = "CANARY-echo-check-7d1f"


class Probe(BaseModel):
    name: str = Field(max_length=5)
    count: int


@pytest.fixture
async def error_client(tmp_path: object) -> AsyncIterator[httpx2.AsyncClient]:
    app: FastAPI = create_app(make_settings(), database=Database.from_url("sqlite+aiosqlite://"))

    @app.post("/_probe")
    async def probe(body: Probe) -> dict[str, str]:
        return {"name": body.name}

    @app.get("/_boom")
    async def boom() -> None:
        raise RuntimeError(f"internal detail {CANARY}")

    @app.get("/_conflict")
    async def conflict() -> None:
        raise Conflict("already exists")

    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
    ):
        yield client


def assert_error_shape(response: httpx2.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str)
    assert error["message"]
    assert error["request_id"] == response.headers["x-request-id"]
    assert "Traceback" not in response.text
    return dict(error)


async def test_malformed_body_is_400_without_echo(error_client: httpx2.AsyncClient) -> None:
    response = await error_client.post("/_probe", json={"name": CANARY, "count": CANARY})
    error = assert_error_shape(response, 400, "invalid_request")
    assert CANARY not in response.text
    details = error["details"]
    assert isinstance(details, list)
    assert len(details) == 2
    for detail in details:
        assert set(detail) == {"loc", "msg"}


async def test_unparseable_json_is_400(error_client: httpx2.AsyncClient) -> None:
    response = await error_client.post(
        "/_probe",
        content=b'{"name": "' + CANARY.encode(),
        headers={"content-type": "application/json"},
    )
    assert_error_shape(response, 400, "invalid_request")
    assert CANARY not in response.text


async def test_unknown_route_is_404_with_shape(error_client: httpx2.AsyncClient) -> None:
    assert_error_shape(await error_client.get("/no/such/route"), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/tenants/acme/principals/"),
        ("GET", "/whoami/"),
        ("POST", "/tenants/acme/deployments/d/mcp/"),
        ("GET", "/healthz/"),
        ("GET", "/nope/"),
    ],
)
async def test_a_trailing_slash_is_404_not_a_redirect_built_from_host(
    error_client: httpx2.AsyncClient, method: str, path: str
) -> None:
    """Starlette's 307 to the path without its slash came before authentication (an anonymous
    caller learnt which routes exist: ``/nope/`` was 404) with a Location from ``Host``."""
    response = await error_client.request(method, path, headers={"host": "evil.example"})
    error = assert_error_shape(response, 404, "not_found")
    assert "location" not in response.headers
    assert {k: v for k, v in error.items() if k != "request_id"} == {
        "code": "not_found",
        "message": "not found",
    }


async def test_wrong_method_is_405_with_shape(error_client: httpx2.AsyncClient) -> None:
    assert_error_shape(await error_client.delete("/healthz"), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/tenants/acme/deployments/d", "DELETE, GET, PATCH"),
        ("PUT", "/tenants/acme/principals", "GET, POST"),
        ("DELETE", "/healthz", "GET, HEAD"),
        ("PUT", "/tenants/acme/deployments/d/mcp", "POST"),
    ],
)
async def test_a_405_allows_every_method_of_the_path(
    error_client: httpx2.AsyncClient, method: str, path: str, allow: str
) -> None:
    """Starlette named the first route whose path matched: FastAPI makes one per method."""
    response = await error_client.request(method, path)
    assert_error_shape(response, 405, "method_not_allowed")
    assert response.headers["allow"] == allow


async def test_unhandled_error_is_500_without_trace(
    error_client: httpx2.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    response = await error_client.get("/_boom")
    assert_error_shape(response, 500, "internal_error")
    assert CANARY not in response.text
    assert "RuntimeError" not in response.text


async def test_hub_error_keeps_its_status(error_client: httpx2.AsyncClient) -> None:
    assert_error_shape(await error_client.get("/_conflict"), 409, "conflict")


async def test_every_response_has_request_id(error_client: httpx2.AsyncClient) -> None:
    ok = await error_client.get("/healthz")
    assert ok.status_code == 200
    assert len(ok.headers["x-request-id"]) >= 8
    other = await error_client.get("/healthz")
    assert other.headers["x-request-id"] != ok.headers["x-request-id"]


async def test_client_request_id_is_echoed_but_never_adopted(
    error_client: httpx2.AsyncClient,
) -> None:
    response = await error_client.get("/healthz", headers={"x-request-id": "trace-12345678"})
    assert response.headers["x-request-id"] != "trace-12345678"
    assert response.headers["x-client-request-id"] == "trace-12345678"
    again = await error_client.get("/healthz", headers={"x-request-id": "trace-12345678"})
    assert again.headers["x-request-id"] != response.headers["x-request-id"]
    hostile = await error_client.get("/healthz", headers={"x-request-id": "bad id\twith spaces"})
    assert hostile.headers["x-request-id"] != "bad id\twith spaces"
    assert "x-client-request-id" not in hostile.headers


async def test_openapi_documents_400_not_422(error_client: httpx2.AsyncClient) -> None:
    spec = (await error_client.get("/openapi.json")).json()
    probe = spec["paths"]["/_probe"]["post"]["responses"]
    assert "422" not in probe
    assert probe["400"]["content"]["application/json"]["schema"]["$ref"].endswith("ErrorResponse")
    assert "HTTPValidationError" not in str(spec)
    docs = await error_client.get("/docs")
    assert docs.status_code == 200


async def test_oversized_bodies_are_413(error_client: httpx2.AsyncClient) -> None:
    big = b'{"name": "' + b"x" * (3 * 1024 * 1024) + b'", "count": 1}'
    declared = await error_client.post(
        "/_probe", content=big, headers={"content-type": "application/json"}
    )
    assert_error_shape(declared, 413, "payload_too_large")

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    streamed = await error_client.post(
        "/_probe", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_error_shape(streamed, 413, "payload_too_large")


async def test_openapi_documents_both_key_headers(error_client: httpx2.AsyncClient) -> None:
    spec = (await error_client.get("/openapi.json")).json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearer"]["scheme"] == "bearer"
    assert schemes["apiKey"]["name"] == "x-api-key"
