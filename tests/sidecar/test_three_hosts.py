"""The engine's three hosts give an agent the same answers: the hub's endpoint, the sidecar in
relay mode and the sidecar in direct mode, in both eras, byte for byte once parsed, but for the
name each gives itself in a 2026-07-28 result's ``serverInfo``.

A ``tools/list`` (the tools' own fields, the ask marker, the hub's namespace and the legacy
shaping), then one raw ``tools/call`` per outcome of DESIGN §10.2 that needs no approval: a
result, invalid arguments (a wrong type, an undeclared argument), an unknown tool, the server's
own error result, the server's JSON-RPC error, and a tool the agent holds ``deny`` on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2

from tests.deploy.serving import free_port
from tests.gateway.support import META
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade_wire import RecordedRequest, Reply
from tests.sidecar.direct import grant
from tests.sidecar.support import Sidecar, listening_sidecar_async, live_hub
from tests.sidecar.test_unportable_arguments import _headers, _live_world, _message, _opened

OPEN = {"type": "object"}
TYPED = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
TOOLS = [
    {"name": name, "inputSchema": TYPED if name == "typed" else OPEN}
    for name in ("free", "typed", "broken", "refusing", "denied")
] + [
    {
        "name": "listed",  # listed with its own fields, an ask marker, no upstream io.mcphub/
        "title": "Listed",
        "inputSchema": OPEN,
        "outputSchema": {"type": "array"},  # not listed to a legacy agent
        "annotations": {"destructiveHint": True},
        "_meta": {"x": 1, "io.mcphub/approval": "forged"},
    }
]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("free", {"a": 1}),
    ("typed", {"n": "x"}),
    ("typed", {"n": 1, "extra": 2}),
    ("missing", {}),
    ("broken", {}),
    ("refusing", {}),
    ("denied", {}),
]


def _server(request: RecordedRequest) -> Reply | None:
    """``broken`` answers an error result, ``refusing`` a JSON-RPC error; the rest echo."""
    params = request.message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if name == "broken":
        result = {"content": [{"type": "text", "text": "it broke"}], "isError": True}
        return Reply(body={"jsonrpc": "2.0", "id": request.rpc_id, "result": result})
    if name == "refusing":
        error = {"code": -32000, "message": "the server says no"}
        return Reply(body={"jsonrpc": "2.0", "id": request.rpc_id, "error": error})
    return None


def _compared(answer: httpx2.Response) -> str:
    """The answer's message as compared: keys sorted, and the sidecar's own name as the hub's."""
    text = json.dumps(_message(answer), sort_keys=True)
    return text.replace('"mcp-hub-sidecar"', '"mcp-hub"')


async def _answers(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> list[str]:
    seen = []
    for era in ("modern", "2025-11-25"):
        listing: dict[str, Any] = {"_meta": META} if era == "modern" else {}
        sent = headers | _headers(era) | ({"mcp-method": "tools/list"} if era == "modern" else {})
        body = {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": listing}
        seen.append(_compared(await http.post(url, json=body, headers=sent)))
        for tool, arguments in CALLS:
            params: dict[str, Any] = {"name": f"docs__{tool}", "arguments": arguments}
            sent = headers | _headers(era)
            if era == "modern":
                params["_meta"] = META
                sent["mcp-name"] = f"docs__{tool}"
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
            seen.append(_compared(await http.post(url, json=body, headers=sent)))
    return seen


async def test_the_hub_and_the_sidecar_in_both_modes_answer_alike(
    tmp_path: Path, handmade_peer: HandmadePeerStarter
) -> None:
    peer = await handmade_peer(era="dual", tools=TOOLS)
    peer.override("tools/call", _server)
    with live_hub(tmp_path) as hub:
        world = await _live_world(hub, peer)
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            await grant(
                http, world.deployed, world.deployed.agent, "tool:docs.denied", "call", "deny"
            )
        async with httpx2.AsyncClient(timeout=30) as http:
            url = f"{hub.url}{world.deployed.url}"
            expected = await _answers(http, url, world.deployed.headers)
            for mode in ("relay", "direct"):
                workdir = tmp_path / mode
                workdir.mkdir()
                extra = ("--mode", mode)
                sidecar = Sidecar(
                    hub, world.deployed, workdir, extra, sidecar_key=world.sidecar.key
                )
                async with listening_sidecar_async(sidecar, free_port()) as running:
                    bearer = {"authorization": f"Bearer {running.token}"}
                    headers = await _opened(http, running.url, bearer)
                    assert await _answers(http, running.url, headers) == expected, mode
    lists = [json.loads(expected[0]), json.loads(expected[len(CALLS) + 1])]
    names = [[t["name"] for t in listed["result"]["tools"]] for listed in lists]
    every = ["docs__broken", "docs__free", "docs__listed", "docs__refusing", "docs__typed"]
    assert names == [every, every]  # the denied tool is listed by none
    marked = [
        next(t for t in listed["result"]["tools"] if t["name"] == "docs__listed")
        for listed in lists
    ]
    assert [t["_meta"] for t in marked] == [{"x": 1, "io.mcphub/approval": "required"}] * 2
    assert ["outputSchema" in t for t in marked] == [True, False]
    outcomes = [json.loads(text) for i, text in enumerate(expected) if i % (len(CALLS) + 1)]
    classes = [
        (o.get("error") or {}).get("data", {}).get("class")
        or ((o["result"].get("_meta") or {}).get("io.mcphub/error") or {}).get("class")
        for o in outcomes
    ]
    per_era = [None, "invalid_arguments", "invalid_arguments", "unknown_tool", None]
    per_era += ["upstream_failed", "forbidden"]
    assert classes == per_era * 2  # the answers compared are the outcomes meant
    assert outcomes[4]["result"]["isError"] is True  # the server's own error result, verbatim
    assert peer.count("tools/call") == 3 * 2 * 3  # free, broken, refusing: each era, each host
