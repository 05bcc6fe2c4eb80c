"""The hub's MCP client: Streamable HTTP in both protocol eras, over the egress fetcher (DESIGN §7).

Usage (one egress operation per call; the caller remembers the era that worked)::

    client = McpClient(fetcher, client_info={"name": "mcp-hub", "version": hub.__version__})
    found = await client.discover(url, pin=origin, bearer=secret, deadline_s=30, era_hint=era)
    done = await client.call_tool(url, "search", {"q": "x"}, pin=origin, bearer=secret,
                                  deadline_s=60, tool=found.tools[0], era_hint=found.era)

Module map (each module's docstring cites the spec sections it implements):

- :mod:`~hub.mcp.client` — ``McpClient``: the operation, era negotiation, discover and call;
- :mod:`~hub.mcp.modern` — the 2026-07-28 wire (``server/discover``, ``_meta``, ``-32022`` retry);
- :mod:`~hub.mcp.legacy` — the handshake eras (``initialize``, sessions, 404, ``DELETE``);
- :mod:`~hub.mcp.channel` — POSTs and DELETE within one operation, request ids and count;
- :mod:`~hub.mcp.reader` — the answer in a JSON or SSE body (priming, notifications, requests);
- :mod:`~hub.mcp.outcomes` — replies to results or reasons; the modern/legacy signals;
- :mod:`~hub.mcp.tools` — ``tools/list`` pagination, dropped tools, duplicate names;
- :mod:`~hub.mcp.headers` — ``Mcp-Name`` / ``Mcp-Param-*``, the base64 sentinel, ``x-mcp-header``;
- :mod:`~hub.mcp.results`, :mod:`~hub.mcp.wire`, :mod:`~hub.mcp.errors`;
- :mod:`~hub.mcp.cli` — ``hub mcp probe`` and ``hub mcp call`` for operators.
"""

from hub.mcp.client import McpClient
from hub.mcp.errors import REASONS, McpError
from hub.mcp.headers import decode_header_value, encode_header_value
from hub.mcp.results import CallResult, DiscoveryResult
from hub.mcp.wire import LEGACY_VERSIONS, MODERN_VERSION, Era

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "REASONS",
    "CallResult",
    "DiscoveryResult",
    "Era",
    "McpClient",
    "McpError",
    "decode_header_value",
    "encode_header_value",
]
