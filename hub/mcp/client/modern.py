"""The 2026-07-28 ("modern") era: no handshake, per-request _meta (MCP-PROTOCOL §1a, §3c, §9).

- Every request is a POST carrying ``MCP-Protocol-Version``, ``Mcp-Method`` (and ``Mcp-Name`` plus
  the ``Mcp-Param-*`` mirrors for ``tools/call``) and ``params._meta`` with the protocol version
  (equal to the header), the client capabilities (``{}``) and the client info. No session, no
  GET, no DELETE; server→client requests on a stream are ignored (MRTR replaced them).
- ``server/discover`` comes first when discovering (and when probing an unknown server). A
  ``-32022`` answer is retried **once**, with a version chosen from ``data.supported``, even when
  the version sent is listed there (the conformance mock does exactly that).
- A discover answer that is not positive evidence of a modern server (any non-2xx but a
  recognised modern error, a malformed result, no modern version in ``supportedVersions``) is an
  *unsettled* failure: the caller falls back to the handshake. Once ``server/discover`` succeeded
  (or a modern error was recognised) failures are *settled*: the server is modern.
- ``server_info`` is ``_meta["io.modelcontextprotocol/serverInfo"]`` of the discover result (or a
  top-level ``serverInfo`` some servers send instead).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import mcp_types

from hub.mcp.client.channel import Channel
from hub.mcp.client.outcomes import failure, is_legacy_signal, modern_error, result_of
from hub.mcp.client.reader import Reply
from hub.mcp.client.results import ServerFacts, check_call_result, valid_model
from hub.mcp.client.tools import ToolCatalog, collect_tools
from hub.mcp.errors import McpError, settled
from hub.mcp.headers import encode_header_value, param_headers
from hub.mcp.wire import (
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    SERVER_INFO_META_KEY,
    UNSUPPORTED_VERSION,
    Json,
    check_result_type,
    modern_meta,
    request,
)

__all__ = ["ModernSession"]

logger = logging.getLogger(__name__)


def _supported(reply: Reply) -> list[str] | None:
    error = reply.error or {}
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return None


class ModernSession:
    """Requests of one operation on the 2026-07-28 wire."""

    def __init__(self, channel: Channel, client_info: Mapping[str, Json], version: str) -> None:
        self.channel = channel
        self.client_info = client_info
        self.version = version
        self.established = False
        """Set once the server answered as a modern server: later failures are settled."""
        self._retried = False

    def _headers(self, method: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {"MCP-Protocol-Version": self.version, "Mcp-Method": method, **(extra or {})}

    async def _post(
        self, method: str, params: Mapping[str, Json], extra: Mapping[str, str] | None = None
    ) -> Reply:
        body = {**params, "_meta": modern_meta(self.version, self.client_info)}
        message = request(self.channel.next_id(), method, body)
        reply = await self.channel.call(message, self._headers(method, extra))
        logger.debug("mcp modern %s: status %s", method, reply.status)
        return reply

    async def _negotiated(
        self, method: str, params: Mapping[str, Json], extra: Mapping[str, str] | None = None
    ) -> Reply:
        """Send, and on ``-32022`` retry once (per session) with a version from ``supported``."""
        reply = await self._post(method, params, extra)
        if reply.error_code != UNSUPPORTED_VERSION or self._retried:
            return reply
        self._retried = True
        supported = _supported(reply)
        mutual = [v for v in MODERN_VERSIONS if v in (supported or ())]
        if not mutual:
            error = McpError("handshake_failed")
            # Only modern versions we do not speak: a real incompatibility, no fallback.
            if supported is not None and not any(v in LEGACY_VERSIONS for v in supported):
                raise settled(error)
            raise error
        self.version = self.version if self.version in mutual else mutual[-1]
        return await self._post(method, params, extra)

    async def discover(self) -> ServerFacts:
        """``server/discover``; unsettled failures mean "not (provably) a modern server"."""
        reply = await self._negotiated("server/discover", {})
        if modern_error(reply):
            raise settled(McpError("handshake_failed"))
        result = result_of(reply, "handshake")
        if result.get("resultType", "complete") != "complete":
            # ``resultType`` is itself 2026 vocabulary: a modern server, with a bad result.
            raise settled(McpError("invalid_result"))
        facts = self._facts(result)
        if facts is None:
            raise McpError("invalid_result")
        self.established = True
        return facts

    def _facts(self, result: dict[str, Json]) -> ServerFacts | None:
        """The server facts of a discover result; ``None`` if it is no modern evidence."""
        # Cache hints are not used (yet); a bad ttlMs/cacheScope must not refuse the server.
        checked = {k: v for k, v in result.items() if k not in ("ttlMs", "cacheScope")}
        if not valid_model(mcp_types.DiscoverResult, checked):
            return None
        supported = result["supportedVersions"]
        if self.version not in supported:
            return None
        meta = result.get("_meta")
        info = meta.get(SERVER_INFO_META_KEY) if isinstance(meta, dict) else None
        info = info if info is not None else result.get("serverInfo", {})
        if not isinstance(info, dict) or (info and not valid_model(mcp_types.Implementation, info)):
            raise settled(McpError("invalid_result"))  # a modern server, with a broken serverInfo
        instructions = result.get("instructions")
        return ServerFacts(self.version, info, result["capabilities"], instructions)

    async def _tools_page(self, cursor: str | None) -> dict[str, Json]:
        reply = await self._negotiated("tools/list", {} if cursor is None else {"cursor": cursor})
        result = result_of(reply, "request")
        check_result_type(result)
        return result

    async def list_tools(self) -> ToolCatalog:
        return await collect_tools(self._tools_page)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Json],
        tool: Mapping[str, Json] | None,
    ) -> dict[str, Json]:
        """``tools/call`` with ``Mcp-Name`` and ``Mcp-Param-*``; the raw ``CallToolResult``.

        Sent without a discover first (the era remembered), a legacy signal (see
        :func:`~hub.mcp.outcomes.is_legacy_signal`; the server ran nothing) is an unsettled
        failure, so the caller may fall back to the handshake.
        """
        extra = {"Mcp-Name": encode_header_value(name), **param_headers(tool, arguments)}
        params = {"name": name, "arguments": dict(arguments)}
        reply = await self._negotiated("tools/call", params, extra)
        if not self.established and is_legacy_signal(reply):
            raise failure(reply, "handshake")
        self.established = True
        if reply.error_code == UNSUPPORTED_VERSION:
            raise McpError("handshake_failed")
        if reply.answer is None or "result" not in reply.answer or not reply.ok:
            raise failure(reply, "call")
        result = reply.answer["result"]
        if not isinstance(result, dict):
            raise McpError("invalid_result")
        check_call_result(result)
        return result
