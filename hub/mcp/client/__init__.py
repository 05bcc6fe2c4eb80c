"""The hub's MCP client: Streamable HTTP in both protocol eras, over the egress fetcher (DESIGN §7).

Module map (each module's docstring cites the spec sections it implements):

- :mod:`~hub.mcp.client.mcp_client` — ``McpClient``: the operation, era negotiation, discover
  and call;
- :mod:`~hub.mcp.client.modern` — the 2026-07-28 wire (``server/discover``, ``_meta``,
  ``-32022`` retry);
- :mod:`~hub.mcp.client.legacy` — the handshake eras (``initialize``, sessions, 404, ``DELETE``);
- :mod:`~hub.mcp.client.keeper` — handshake sessions kept between tool calls;
- :mod:`~hub.mcp.client.channel` — POSTs and DELETE within one operation, request ids and count;
- :mod:`~hub.mcp.client.reader` — the answer in a JSON or SSE body (priming, notifications,
  requests);
- :mod:`~hub.mcp.client.outcomes` — replies to results or reasons; the modern/legacy signals;
- :mod:`~hub.mcp.client.tools` — ``tools/list`` pagination, dropped tools, duplicate names;
- :mod:`~hub.mcp.client.results` — what the client hands back.
"""

from hub.mcp.client.keeper import SessionKeeper
from hub.mcp.client.mcp_client import McpClient
from hub.mcp.client.results import CallResult, DiscoveryResult

__all__ = ["CallResult", "DiscoveryResult", "McpClient", "SessionKeeper"]
