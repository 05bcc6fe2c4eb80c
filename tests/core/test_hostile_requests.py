"""Requests built to break the hub get a clean 400 and a short log (hardening, DESIGN §13).

Found by a hostile review: a body nested ~600 deep (``RecursionError`` in the NUL check, a 500
with a ~100 KB traceback in the log), a cursor whose time leaves the calendar once converted to
UTC (``OverflowError``), a lone surrogate in a JSON string (unencodable on both backends), and a
client ``x-request-id`` adopted as the hub's own (two requests could share an id in the audit);
later (stop 42) ``NaN``, ``Infinity`` or ``1e400`` anywhere in a body (a 500 on PostgreSQL).
"""

from __future__ import annotations

import base64
import json
import logging

import httpx2
import pytest

from hub.core.db import Database
from hub.core.schemas import MAX_BODY_DEPTH
from tests.support.stories import audit_events, make_tenant_admin


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


def _nested_body(depth: int) -> bytes:
    """A credential body whose metadata nests ``depth`` objects (written as text: the test's
    own ``json.dumps`` would hit the recursion limit first)."""
    base = json.dumps(_credential("METADATA"))
    metadata = '{"n":' * depth + '{"leaf":1}' + "}" * depth
    return base.replace('"METADATA"', metadata).encode()


def _credential(metadata: object) -> dict[str, object]:
    return {
        "name": "c",
        "type": "api_key",
        "secret": "hostile-request-secret",
        "api_base_url": "https://api.example.com",
        "metadata": metadata,
    }


@pytest.mark.parametrize("depth", [MAX_BODY_DEPTH + 1, 600, 5000])
async def test_deeply_nested_body_is_400_with_a_short_log(
    client: httpx2.AsyncClient,
    database: Database,
    caplog: pytest.LogCaptureFixture,
    depth: int,
) -> None:
    setup = await make_tenant_admin(database)
    caplog.set_level(logging.DEBUG)
    r = await client.post(
        setup.url("credentials"),
        content=_nested_body(depth),
        headers={**setup.admin.headers, "content-type": "application/json"},
    )
    assert r.status_code == 400, r.text[:500]
    assert r.json()["error"]["code"] == "invalid_request"
    ours = [record for record in caplog.records if record.name.startswith("hub")]
    assert not any(record.exc_info for record in ours)
    assert sum(len(record.getMessage()) for record in ours) < 2_000


@pytest.mark.parametrize("depth", [MAX_BODY_DEPTH + 1, 100_000])
async def test_a_deep_body_is_400_on_a_route_whose_key_lookup_reads_the_body(
    client: httpx2.AsyncClient, database: Database, depth: int
) -> None:
    """``grants/check`` reads its body ahead, with the key's lookup: a body nested past the
    interpreter's recursion limit answered 500 there, before the route's own parse (stop 42)."""
    setup = await make_tenant_admin(database)
    nested = b"[" * depth + b"]" * depth
    body = b'{"principal_id": ' + nested + b', "resource": "*", "action": "read"}'
    r = await client.post(
        setup.url("grants", "check"),
        content=body,
        headers={**setup.admin.headers, "content-type": "application/json"},
    )
    assert r.status_code == 400, r.text[:500]
    assert r.json()["error"]["code"] == "invalid_request"


async def test_nesting_within_the_bound_is_accepted(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    r = await client.post(
        setup.url("credentials"),
        json=_credential(_nested(MAX_BODY_DEPTH - 3)),
        headers=setup.admin.headers,
    )
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "a\\udc00b"])
async def test_lone_surrogate_in_metadata_is_400(
    client: httpx2.AsyncClient, database: Database, escape: str
) -> None:
    setup = await make_tenant_admin(database)
    raw = json.dumps(_credential({"note": "PLACEHOLDER"})).replace("PLACEHOLDER", escape)
    r = await client.post(
        setup.url("credentials"),
        content=raw.encode(),
        headers={**setup.admin.headers, "content-type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert "surrogate" in r.json()["error"]["details"][0]["msg"]


@pytest.mark.parametrize("number", ["NaN", "-Infinity", "1e400", "-1e999"])
async def test_a_number_that_is_not_finite_is_400_on_both_backends(
    client: httpx2.AsyncClient, database: Database, number: str
) -> None:
    """``json.loads`` reads them; PostgreSQL's ``jsonb`` refused them (a 500) and SQLite's JSON
    gave them back as ``null`` (stop 42)."""
    setup = await make_tenant_admin(database)
    raw = json.dumps(_credential({"note": [1.5, "PLACEHOLDER"]}))
    raw = raw.replace('"PLACEHOLDER"', number)
    assert number in raw
    r = await client.post(
        setup.url("credentials"),
        content=raw.encode(),
        headers={**setup.admin.headers, "content-type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert "finite" in r.json()["error"]["details"][0]["msg"]
    listed = await client.get(setup.url("credentials"), headers=setup.admin.headers)
    assert listed.json()["data"] == []  # nothing stored


@pytest.mark.parametrize(
    "stamp",
    ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59.999999-00:01"],
)
async def test_cursor_outside_the_calendar_in_utc_is_400(
    client: httpx2.AsyncClient, database: Database, stamp: str
) -> None:
    setup = await make_tenant_admin(database)
    raw = json.dumps([stamp, "00000000-0000-0000-0000-000000000000"]).encode()
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    for route in ("principals", "credentials", "grants", "servers", "deployments"):
        r = await client.get(
            setup.url(route), params={"cursor": cursor}, headers=setup.admin.headers
        )
        assert r.status_code == 400, (route, r.text)
        assert r.json()["error"]["message"] == "the cursor is invalid"


async def test_client_request_id_never_becomes_the_hubs(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    shared = "client-chosen-id-0001"
    ids = []
    for name in ("one", "two"):
        r = await client.post(
            setup.url("principals"),
            json={"kind": "agent", "name": name},
            headers={**setup.admin.headers, "x-request-id": shared},
        )
        assert r.status_code == 201
        assert r.headers["x-request-id"] != shared
        assert r.headers["x-client-request-id"] == shared
        ids.append(r.headers["x-request-id"])
    rows = await audit_events(database, action="principal.create")
    assert [row.request_id for row in rows] == ids
    assert len(set(ids)) == 2
    assert all(row.details["client_request_id"] == shared for row in rows)
