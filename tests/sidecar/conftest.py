"""Sidecar tests: a live ``hub serve``, real SDK peers, and the sidecar as a subprocess."""

from __future__ import annotations

from tests.peers.fixtures import sdk_peer

__all__ = ["sdk_peer"]
