"""Upstream tests: a hub that may reach loopback peers, the handmade peer, a cutting relay."""

from __future__ import annotations

import pytest

from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.peers.fixtures import handmade_peer
from tests.upstream.cutting import cutting_relay

__all__ = ["cutting_relay", "handmade_peer"]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, allow_loopback=True, discovery_timeout_s=3)
