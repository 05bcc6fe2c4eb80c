"""A ``tools/call``'s arguments, checked before anything leaves the hub (DESIGN §10.2 step 2).

Invalid and undeclared arguments are ``isError`` ``invalid_arguments`` with each error's path and
no upstream request; the per-entry ``"arguments": "schema"`` opt-out lets the schema alone decide;
a remote ``$ref`` is never fetched; a backtracking pattern and costly keywords stay linear.
"""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from tests.gateway.costly import RECURSIVE_ONE_OF, nested
from tests.gateway.outcomes import (
    answer_result,
    call_tool,
    error_class,
    setup_upstream,
    upstream_calls,
)
from tests.peers.fixtures import HandmadePeerStarter


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"text": 5}, "$.text"),
        ({}, "$"),
        ({"text": "x", "n": "not a number"}, "$.n"),
        ({"text": "x", "extra": 1}, "$.extra"),
        (["not", "an", "object"], "$"),
    ],
    ids=["wrong-type", "missing-required", "wrong-nested-type", "undeclared", "not-an-object"],
)
async def test_invalid_arguments_are_refused_with_their_path(
    client: httpx2.AsyncClient,
    database: Database,
    handmade_peer: HandmadePeerStarter,
    arguments: Any,
    path: str,
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer)
    result = answer_result(await call_tool(client, deployed, "up__echo", arguments))
    assert result["isError"] is True
    assert error_class(result) == "invalid_arguments"
    assert path in [e["path"] for e in result["_meta"]["io.mcphub/error"]["errors"]]
    assert path in result["content"][0]["text"]
    assert upstream_calls(peer) == []


async def test_schema_mode_lets_the_schema_alone_decide(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    deployed, peer = await setup_upstream(client, database, handmade_peer, arguments="schema")
    result = answer_result(await call_tool(client, deployed, "up__echo", {"text": "x", "extra": 1}))
    assert result.get("isError") is not True
    assert len(upstream_calls(peer)) == 1


async def test_a_remote_ref_is_never_fetched(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    listener = await handmade_peer(era="modern")  # would see any fetch of the referenced schema
    tool = {
        "name": "reffed",
        "inputSchema": {
            "type": "object",
            "properties": {"x": {"$ref": f"{listener.url.rsplit('/', 1)[0]}/schema.json"}},
        },
    }
    deployed, peer = await setup_upstream(client, database, handmade_peer, tools=[tool])
    result = answer_result(await call_tool(client, deployed, "up__reffed", {"x": 1}))
    assert result["isError"] is True
    assert error_class(result) == "invalid_arguments"
    assert listener.requests == []
    assert upstream_calls(peer) == []


async def test_a_pattern_runs_in_linear_time(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """A catastrophic-backtracking pattern for Python's ``re`` is linear on RE2."""
    tool = {
        "name": "regex",
        "inputSchema": {
            "type": "object",
            "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}},
        },
    }
    deployed, _peer = await setup_upstream(client, database, handmade_peer, tools=[tool])
    started = time.monotonic()
    result = answer_result(await call_tool(client, deployed, "up__regex", {"q": "a" * 5000 + "!"}))
    assert time.monotonic() - started < 1.5
    assert error_class(result) == "invalid_arguments"


async def test_the_argument_check_is_linear_in_the_arguments(
    client: httpx2.AsyncClient, database: Database, handmade_peer: HandmadePeerStarter
) -> None:
    """``uniqueItems`` over objects and a recursive ``oneOf`` cost jsonschema quadratic and
    exponential time on the event loop; the hub checks the first in one pass and cuts the
    second off as ``invalid_arguments`` before anything reaches the upstream."""
    unique = {
        "name": "tags",
        "inputSchema": {
            "type": "object",
            "properties": {"tags": {"type": "array", "uniqueItems": True}},
        },
    }
    tree = {"name": "tree", "inputSchema": RECURSIVE_ONE_OF}
    deployed, peer = await setup_upstream(client, database, handmade_peer, tools=[unique, tree])
    started = time.monotonic()
    tags = [{"k": i} for i in range(6_000)]
    ran = answer_result(await call_tool(client, deployed, "up__tags", {"tags": tags}))
    assert ran.get("isError") is not True
    repeated = answer_result(
        await call_tool(client, deployed, "up__tags", {"tags": [*tags, {"k": 0}]})
    )
    assert error_class(repeated) == "invalid_arguments"
    assert "item 6000 repeats item 0" in repeated["content"][0]["text"]
    refused = answer_result(await call_tool(client, deployed, "up__tree", nested(24)))
    assert time.monotonic() - started < 3 * 1.5
    assert error_class(refused) == "invalid_arguments"
    assert "cost too much to check" in refused["content"][0]["text"]
    assert [c.message["params"]["name"] for c in upstream_calls(peer)] == ["tags"]
