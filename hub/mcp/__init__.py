"""MCP protocol code: the wire facts both sides share, the hub's client, and room for the server.

- :mod:`hub.mcp.wire` — versions, eras, JSON-RPC codes, encoding, ``resultType`` checks;
- :mod:`hub.mcp.headers` — ``Mcp-Name`` / ``Mcp-Param-*``, the base64 sentinel, ``x-mcp-header``;
- :mod:`hub.mcp.errors` — :class:`McpError` and its reasons;
- :mod:`hub.mcp.challenge` — the ``Bearer`` challenge of a 401/403 (RFC 6750 §3, RFC 9728 §5.1);
- :mod:`hub.mcp.client` — the hub's client to upstream servers, both eras (DESIGN §7);
- :mod:`hub.mcp.server` — the agents' endpoint dispatcher (DESIGN §10.4).

Usage (one egress operation per call; the caller remembers the era that worked)::

    client = McpClient(fetcher, client_info={"name": "mcp-hub", "version": hub.__version__})
    found = await client.discover(url, pin=origin, bearer=secret, deadline_s=30, era_hint=era)
    done = await client.call_tool(url, "search", {"q": "x"}, pin=origin, bearer=secret,
                                  deadline_s=60, tool=found.tools[0], era_hint=found.era)
"""

from hub.mcp.challenge import BearerChallenge, parse_bearer_challenge, split_scopes
from hub.mcp.client import CallResult, DiscoveryResult, McpClient, SessionKeeper
from hub.mcp.errors import REASONS, McpError
from hub.mcp.headers import decode_header_value, encode_header_value
from hub.mcp.wire import LEGACY_VERSIONS, MODERN_VERSION, Era, era_from_hint

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "REASONS",
    "BearerChallenge",
    "CallResult",
    "DiscoveryResult",
    "Era",
    "McpClient",
    "McpError",
    "SessionKeeper",
    "decode_header_value",
    "encode_header_value",
    "era_from_hint",
    "parse_bearer_challenge",
    "split_scopes",
]
