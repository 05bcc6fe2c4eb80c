"""Gateway tests: a hub that reaches loopback peers, and the real and hostile peers."""

from __future__ import annotations

import pytest

from hub.core.settings import Settings
from tests.conftest import make_settings
from tests.peers.fixtures import everything_peer, handmade_peer, node_tools, sdk_peer

__all__ = ["everything_peer", "handmade_peer", "node_tools", "sdk_peer"]


@pytest.fixture
def settings(db_url: str, request: pytest.FixtureRequest) -> Settings:
    """The gateway tests' settings; an indirect parameter (a dict) overrides some of them."""
    overrides = getattr(request, "param", {})
    return make_settings(
        db_url,
        **{
            "allow_loopback": True,
            "discovery_timeout_s": 10,
            "tool_call_timeout_s": 3,
            "approval_wait_s": 0,
            "max_tool_result_bytes": 64 * 1024,
            **overrides,
        },
    )
