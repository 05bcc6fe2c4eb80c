"""Requests built to break the hub get a clean 400 and a short log (hardening, DESIGN §13).

Found by a hostile review: a body nested ~600 deep (``RecursionError`` in the NUL check, a 500
with a ~100 KB traceback in the log), a cursor whose time leaves the calendar once converted to
UTC (``OverflowError``), a lone surrogate in a JSON string (unencodable on both backends), and a
client ``x-request-id`` adopted as the hub's own (two requests could share an id in the audit);
later (stop 42) ``NaN``, ``Infinity`` or ``1e400`` anywhere in a body (a 500 on PostgreSQL).
"""

from __future__ import annotations

import base64
import gzip
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


_UTF8_JSON = "the request body must be UTF-8 JSON (RFC 8259 §8.1)"
_SENT_AS_IT_IS = (
    "the request body must be sent as it is: the hub accepts no content-encoding "
    "(send it uncompressed, without a content-encoding header)"
)
_UTF8_CHARSET = "the request body must be UTF-8 JSON: send charset=utf-8, or no charset"


def _encoded(how: str) -> tuple[bytes, dict[str, str]]:
    """A credential body, sent ``how``; with the headers it is sent with."""
    text = json.dumps(_credential({"note": "café"}), ensure_ascii=False)
    json_type = {"content-type": "application/json"}
    return {
        "invalid UTF-8": (text.encode("latin-1"), json_type),
        "latin-1 declared": (
            text.encode("latin-1"),
            {"content-type": "application/json; charset=iso-8859-1"},
        ),
        "ASCII declared latin-1": (
            json.dumps(_credential({})).encode(),
            {"content-type": 'application/json;charset="ISO-8859-1"'},
        ),
        "gzip": (gzip.compress(text.encode()), {**json_type, "content-encoding": "gzip"}),
        "UTF-16": (text.encode("utf-16"), json_type),
        "UTF-16 without BOM": (text.encode("utf-16-be"), json_type),
        "UTF-32": (text.encode("utf-32"), json_type),
    }[how]


@pytest.mark.parametrize(
    ("how", "status", "message"),
    [
        ("invalid UTF-8", 400, _UTF8_JSON),
        ("latin-1 declared", 415, _UTF8_CHARSET),
        ("ASCII declared latin-1", 415, _UTF8_CHARSET),
        ("gzip", 415, _SENT_AS_IT_IS),
        ("UTF-16", 400, _UTF8_JSON),
        ("UTF-16 without BOM", 400, _UTF8_JSON),
        ("UTF-32", 400, _UTF8_JSON),
    ],
)
async def test_a_body_that_is_not_utf8_json_as_it_is_says_what_to_fix(
    client: httpx2.AsyncClient, database: Database, how: str, status: int, message: str
) -> None:
    """JSON is UTF-8 (RFC 8259 §8.1): FastAPI's guess took UTF-16 (201), and refused the rest
    with "the request is invalid" and nothing to say the encoding was at fault."""
    setup = await make_tenant_admin(database)
    body, headers = _encoded(how)
    r = await client.post(
        setup.url("credentials"), content=body, headers={**setup.admin.headers, **headers}
    )
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert (error["message"], error["request_id"]) == (message, r.headers["x-request-id"])
    listed = await client.get(setup.url("credentials"), headers=setup.admin.headers)
    assert listed.json()["data"] == []  # nothing stored


async def test_utf8_declared_any_way_is_read(
    client: httpx2.AsyncClient, database: Database
) -> None:
    setup = await make_tenant_admin(database)
    text = json.dumps(_credential({"note": "café"}), ensure_ascii=False)
    for n, content_type in enumerate(["application/json; charset=UTF-8", "application/json"]):
        body = text.replace('"c"', f'"c{n}"', 1).encode()
        headers = {**setup.admin.headers, "content-type": content_type}
        r = await client.post(setup.url("credentials"), content=body, headers=headers)
        assert r.status_code == 201, r.text
    identity = {**setup.admin.headers, "content-encoding": "identity"}
    r = await client.post(
        setup.url("principals"), json={"kind": "agent", "name": "a"}, headers=identity
    )
    assert r.status_code == 201, r.text


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
