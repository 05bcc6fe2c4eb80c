"""Drift-watch tests: a hub that reaches loopback peers, and the real and hostile peers."""

from __future__ import annotations

import pytest

from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.peers.fixtures import handmade_peer, sdk_peer

__all__ = ["handmade_peer", "sdk_peer"]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(
        db_url,
        allow_loopback=True,
        discovery_timeout_s=2,
        tool_call_timeout_s=3,
        approval_wait_s=0,
    )
