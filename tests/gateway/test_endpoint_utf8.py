"""The agents' endpoint reads UTF-8 JSON only (RFC 8259 §8.1; MCP: every message is UTF-8).

The endpoint parsed a body in whatever encoding ``json.detect_encoding`` guessed, so a UTF-16 or
UTF-32 call ran, while the REST routes refuse such a body (:mod:`hub.core.body_encoding`); and a
body whose bytes were not UTF-8 got "the body is not JSON", with nothing to say the encoding was
at fault. Each is now the parse error (400 ``-32700``) saying the body must be UTF-8, in both
eras, and nothing leaves the hub. A UTF-8 byte order mark is skipped (§8.1 lets a parser ignore
it, and the REST routes do): such a body is UTF-8. Answers from upstream servers are read as they
were (the change is the endpoint's input only).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from hub.core.db import Database
from hub.mcp import MODERN_VERSION
from tests.gateway.support import META, Deployed, Upstream, deploy
from tests.peers.fixtures import HandmadePeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import RecordedRequest, Reply

FREE = {"name": "free", "inputSchema": {"type": "object"}}  # declares nothing: anything goes
ERAS = ["modern", "2025-11-25", "2025-03-26"]
NOT_UTF8 = "Parse error: the request body must be UTF-8 JSON (RFC 8259 §8.1)"
NOTE = "café ☕ 𝄞"  # one, two, three and four UTF-8 bytes a character


@pytest.fixture
async def peer(handmade_peer: HandmadePeerStarter) -> HandmadePeer:
    return await handmade_peer(era="dual", tools=[FREE])


@pytest.fixture
async def deployed(client: httpx2.AsyncClient, database: Database, peer: HandmadePeer) -> Deployed:
    return await deploy(client, database, [Upstream("up", peer.url)])


def _call(deployed: Deployed, era: str) -> tuple[str, dict[str, str]]:
    """A ``tools/call`` of ``up__free`` with ``{"note": NOTE}`` as an ``era`` client sends it:
    its JSON text (not yet encoded) and headers (2025-03-26: no version header)."""
    params: dict[str, Any] = {"name": "up__free", "arguments": {"note": NOTE}}
    headers = deployed.headers | {"content-type": "application/json"}
    if era == "modern":
        params["_meta"] = META
        headers |= {
            "mcp-protocol-version": MODERN_VERSION,
            "mcp-method": "tools/call",
            "mcp-name": "up__free",
        }
    elif era != "2025-03-26":
        headers["mcp-protocol-version"] = era
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return json.dumps(message, ensure_ascii=False), headers


#: how a body is sent: a Unicode encoding other than UTF-8 (with a byte order mark, or without),
#: or UTF-8 but for one character (é as the single byte ``0xE9`` of Latin-1: not UTF-8)
ENCODINGS = {
    "utf16-bom": lambda text: text.encode("utf-16"),
    "utf16le": lambda text: text.encode("utf-16-le"),
    "utf16be": lambda text: text.encode("utf-16-be"),
    "utf32-bom": lambda text: text.encode("utf-32"),
    "utf32le": lambda text: text.encode("utf-32-le"),
    "utf32be": lambda text: text.encode("utf-32-be"),
    "latin1-byte": lambda text: text.encode().replace("é".encode(), b"\xe9"),
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("encoding", list(ENCODINGS))
async def test_a_body_that_is_not_utf8_is_a_parse_error_saying_so(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer, era: str, encoding: str
) -> None:
    text, headers = _call(deployed, era)
    body = ENCODINGS[encoding](text)
    r = await client.post(deployed.url, content=body, headers=headers)
    assert r.status_code == 400, r.text
    assert r.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": NOT_UTF8},
    }
    assert peer.count("tools/call") == 0  # nothing left the hub


@pytest.mark.parametrize("era", ERAS)
async def test_utf8_with_or_without_a_byte_order_mark_runs(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer, era: str
) -> None:
    text, headers = _call(deployed, era)
    for body in (text.encode(), b"\xef\xbb\xbf" + text.encode()):
        r = await client.post(deployed.url, content=body, headers=headers)
        assert r.status_code == 200, r.text
        result = r.json()["result"]
        assert "isError" not in result, result
        assert result["structuredContent"] == {"note": NOTE}
    assert peer.count("tools/call") == 2


async def test_an_upstream_answer_in_utf16_is_still_read(
    client: httpx2.AsyncClient, deployed: Deployed, peer: HandmadePeer
) -> None:
    """Only the agents' input changed: an upstream server's UTF-16 answer is read as before."""

    def answer(request: RecordedRequest) -> Reply:
        content = [{"type": "text", "text": NOTE}]
        message = {"jsonrpc": "2.0", "id": request.rpc_id, "result": {"content": content}}
        encoded = json.dumps(message, ensure_ascii=False).encode("utf-16")
        return Reply(body=encoded, headers={"content-type": "application/json"})

    peer.override("tools/call", answer)
    text, headers = _call(deployed, "modern")
    r = await client.post(deployed.url, content=text.encode(), headers=headers)
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert "isError" not in result, result
    assert result["content"] == [{"type": "text", "text": NOTE}]
