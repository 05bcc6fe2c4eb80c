"""The agents' MCP endpoint dispatcher (DESIGN §10.4), when the hub serves MCP itself.

This package is the room for the server side of the protocol: classifying a request's era,
checking the per-request ``_meta`` and ``Mcp-*`` headers against the body, and dispatching
``server/discover``, ``initialize``, ``tools/list`` and ``tools/call`` to the gateway engine. It
shares :mod:`hub.mcp.wire`, :mod:`hub.mcp.headers` and :mod:`hub.mcp.errors` with the client.
"""
