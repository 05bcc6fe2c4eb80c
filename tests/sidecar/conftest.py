"""Sidecar tests: a live ``hub serve`` (or the in-process app that reaches loopback peers), real
SDK peers, and the sidecar as a subprocess."""

from __future__ import annotations

import pytest

from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.peers.fixtures import handmade_peer, sdk_peer

__all__ = ["handmade_peer", "sdk_peer"]


@pytest.fixture
def settings(db_url: str, request: pytest.FixtureRequest) -> Settings:
    """The sidecar tests' settings; an indirect parameter (a dict) overrides some of them."""
    overrides = getattr(request, "param", {})
    return make_settings(
        db_url,
        **{"allow_loopback": True, "tool_call_timeout_s": 5, "approval_wait_s": 0, **overrides},
    )
