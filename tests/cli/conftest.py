"""CLI tests reach a real ``hub serve`` and real loopback MCP peers."""

from __future__ import annotations

from tests.peers.fixtures import sdk_peer

__all__ = ["sdk_peer"]
