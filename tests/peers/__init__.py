"""Real and scriptable MCP peers for the hub's client tests.

- ``sdk_server``: the official ``mcp`` SDK server over Streamable HTTP, run as a subprocess.
- ``fixtures``: pytest fixtures (``sdk_peer``, ``everything_peer``, ``handmade_peer``) other test
  packages import (see ``tests/peers/conftest.py`` for the one-line re-export).
- ``handmade``: an in-process, scriptable (and optionally hostile) Streamable HTTP peer.
- ``conformance``: a runner for ``@modelcontextprotocol/conformance`` client scenarios.
"""
