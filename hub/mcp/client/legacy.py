"""The handshake ("legacy") era: 2025-11-25, 2025-06-18, 2025-03-26 (MCP-PROTOCOL §2, §3a, §9).

1. ``initialize`` offering the newest version (or the one asked for), ``capabilities: {}`` and
   the client info; no ``MCP-Protocol-Version`` header on that first POST.
2. The answered ``protocolVersion`` must be one the client speaks (the server may counter-offer);
   ``Mcp-Session-Id`` is captured from that response only (visible ASCII, 0x21-0x7E).
3. ``notifications/initialized`` (202 expected), then requests; every one after ``initialize``
   carries ``MCP-Protocol-Version: <negotiated>`` and the session id if one was issued.
4. A **404 while sending a session id** means the server ended the session: start a new
   ``initialize`` without it, once, and redo the interrupted work from its start (a listing
   restarts at the first page: cursors do not survive a session).
5. ``DELETE`` the session at the end, best effort (405 or any failure tolerated, a bounded time),
   unless the caller keeps it for the next call (:mod:`hub.mcp.client.keeper`).
6. A kept session is *resumed* by a later call: its id, version and request ids as they were, no
   ``initialize``. A resumed session that gets 404 or 400 (the server forgot it, or no longer takes
   the version it negotiated; either way it ran nothing) starts a new session once, as in 4.

Server→client requests arriving on a response stream (sampling, elicitation, roots) are
answered at once with a POSTed JSON-RPC error ``-32601``, since the hub offers none of these
capabilities (a ``ping`` gets its empty result); otherwise a server waiting for the answer
would never send ours. ``tools/call`` also carries ``Mcp-Name`` and ``Mcp-Param-*`` in this era.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TypeVar

import mcp_types

from hub.mcp.client.channel import Channel
from hub.mcp.client.keeper import KeptSession
from hub.mcp.client.outcomes import failure, result_of
from hub.mcp.client.reader import Reply
from hub.mcp.client.results import ServerFacts, check_call_result, valid_model
from hub.mcp.client.tools import ToolCatalog, collect_tools
from hub.mcp.errors import McpError
from hub.mcp.headers import encode_header_value, param_headers
from hub.mcp.wire import (
    LEGACY_VERSIONS,
    METHOD_NOT_FOUND,
    Json,
    check_result_type,
    error_response,
    notification,
    request,
    result_response,
)

__all__ = ["LegacySession"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
DELETE_WITHIN_S = 2.0
#: how long a cancelled call's ``notifications/cancelled`` may take (best effort)
CANCEL_WITHIN_S = 2.0


class _SessionLost(Exception):
    """404 while sending a session id (internal: caught by ``_in_session``)."""


def _valid_session_id(value: str) -> bool:
    return bool(value) and all("!" <= ch <= "~" for ch in value)


class LegacySession:
    """One handshake session within one operation (see the module docstring)."""

    def __init__(self, channel: Channel, client_info: Mapping[str, Json], offer: str) -> None:
        self.channel = channel
        self.client_info = client_info
        self.offer = offer
        self.version: str | None = None
        self.session_id: str | None = None
        self.established = False
        """Set once ``initialize`` succeeded: the server is legacy, later failures are settled."""
        self._reinitialized = False
        self.resumed = False
        """Set while this is a kept session taken up again, until a new ``initialize``."""
        self._ids: Iterator[int] = channel.ids
        self._pending: int | None = None  # the request awaiting its answer (for ``abandon``)

    @classmethod
    def resume(
        cls, channel: Channel, client_info: Mapping[str, Json], offer: str, kept: KeptSession
    ) -> LegacySession:
        """A kept session taken up again on ``channel`` (see the module docstring, 6)."""
        session = cls(channel, client_info, offer)
        session.version, session.session_id = kept.version, kept.session_id
        session.established = session.resumed = True
        session._ids = kept.ids
        return session

    @property
    def reopened(self) -> bool:
        """Whether this operation lost its session and initialised a new one."""
        return self._reinitialized

    def keep(self) -> KeptSession | None:
        """This session for a later call to resume (``None`` unless it is established)."""
        if not self.established or self.version is None:
            return None
        return KeptSession(self.session_id, self.version, self._ids)

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return {**headers, **(extra or {})}

    async def _answer_server_request(
        self, message: dict[str, Json], session_id: str | None
    ) -> None:
        """Answer a server→client request on a response stream (see the module docstring)."""
        request_id = message.get("id")
        if message.get("method") == "ping":
            answer = result_response(request_id, {})
        else:
            answer = error_response(request_id, METHOD_NOT_FOUND, "Method not found")
        headers = self._headers()
        if session_id is not None and self.session_id is None and _valid_session_id(session_id):
            headers["Mcp-Session-Id"] = session_id  # never a value that is not visible ASCII
        status = await self.channel.send(answer, headers)
        logger.debug("mcp legacy: answered a server request, status %s", status)

    async def _call(
        self, method: str, params: Mapping[str, Json], extra: Mapping[str, str] | None = None
    ) -> Reply:
        self._pending = next(self._ids)
        message = request(self._pending, method, params)
        reply = await self.channel.call(
            message, self._headers(extra), on_request=self._answer_server_request
        )
        self._pending = None
        logger.debug("mcp legacy %s: status %s", method, reply.status)
        if reply.status == 404 and self.session_id is not None:
            raise _SessionLost
        if self.resumed and reply.status in (400, 404):
            raise _SessionLost
        return reply

    # ------------------------------------------------------------------ handshake
    async def initialize(self) -> ServerFacts:
        """``initialize`` + ``notifications/initialized``; unsettled failures until it succeeded."""
        self.version = self.session_id = None
        self.resumed = False
        params = {"protocolVersion": self.offer, "capabilities": {}, "clientInfo": self.client_info}
        reply = await self._call("initialize", params)
        result = result_of(reply, "handshake")
        if reply.session_id is not None and not _valid_session_id(reply.session_id):
            raise McpError("protocol_error")
        self.session_id = reply.session_id  # from here on, ``close()`` deletes it
        check_result_type(result)
        if not valid_model(mcp_types.InitializeResult, result):
            raise McpError("invalid_result")
        version = result["protocolVersion"]
        if version not in LEGACY_VERSIONS:
            raise McpError("handshake_failed")
        self.version = version
        self.established = True
        status = await self.channel.send(notification("notifications/initialized"), self._headers())
        if status in (401, 403):
            raise McpError("unauthorized", status=status)
        if not 200 <= status < 300:
            raise McpError("handshake_failed")
        return ServerFacts(
            version, result["serverInfo"], result["capabilities"], result.get("instructions")
        )

    async def _in_session(self, action: Callable[[], Awaitable[T]]) -> T:
        """Run ``action``; if the session is lost, re-initialize once and run it again."""
        while True:
            try:
                return await action()
            except _SessionLost:
                pass
            if self._reinitialized:
                raise McpError("handshake_failed")
            self._reinitialized = True
            logger.debug("mcp legacy: session lost, initializing again")
            await self.initialize()

    # ------------------------------------------------------------------ requests
    async def _tools_page(self, cursor: str | None) -> dict[str, Json]:
        reply = await self._call("tools/list", {} if cursor is None else {"cursor": cursor})
        result = result_of(reply, "request")
        check_result_type(result)
        return result

    async def list_tools(self) -> ToolCatalog:
        return await self._in_session(lambda: collect_tools(self._tools_page))

    async def call_tool(
        self, name: str, arguments: Mapping[str, Json], tool: Mapping[str, Json] | None
    ) -> dict[str, Json]:
        """``tools/call``; the raw ``CallToolResult`` (a JSON-RPC error is ``tool_error``)."""
        extra = {"Mcp-Name": encode_header_value(name), **param_headers(tool, arguments)}
        params = {"name": name, "arguments": dict(arguments)}
        reply = await self._in_session(lambda: self._call("tools/call", params, extra))
        if not reply.ok or reply.answer is None or "result" not in reply.answer:
            raise failure(reply, "call")
        result = reply.answer["result"]
        if not isinstance(result, dict):
            raise McpError("invalid_result")
        check_call_result(result)
        return result

    async def abandon(self) -> None:
        """The request in flight was cancelled (the agent went away): tell the server with
        ``notifications/cancelled``, then end the session (a server ends its requests with
        it); both best effort and brief, from a task whose cancellation was delivered."""
        pending, self._pending = self._pending, None
        if self.session_id is None:
            return  # a server without sessions learns it from the closed connection alone
        # never past the operation's deadline (less half a second), as the DELETE: a call the
        # deadline ended must answer its agent within it, whatever the server does with these
        budget = min(CANCEL_WITHIN_S, self.channel.remaining() - 0.5)
        if pending is not None and budget > 0:
            cancelled = notification(
                "notifications/cancelled",
                {"requestId": pending, "reason": "the agent cancelled the call"},
            )
            with contextlib.suppress(Exception):
                async with asyncio.timeout(budget):
                    await self.channel.send(cancelled, self._headers())
        with contextlib.suppress(Exception):
            await self.close()

    async def close(self) -> None:
        """``DELETE`` the session, best effort (no session, nothing to do)."""
        if self.session_id is None:
            return
        headers = self._headers()
        self.session_id = None
        await self.channel.delete(headers, within=DELETE_WITHIN_S)
