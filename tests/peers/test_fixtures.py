"""The fixtures fail loudly when a peer cannot start, and skip (or fail) without Node."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers import fixtures
from tests.peers.fixtures import SdkPeerStarter, default_tools, many_tools


async def test_a_peer_that_dies_at_startup_fails_with_its_output(
    sdk_peer: SdkPeerStarter,
) -> None:
    with pytest.raises(pytest.fail.Exception, match="invalid choice: 'bogus'"):
        await sdk_peer("bogus")


def test_tool_sets() -> None:
    names = [t["name"] for t in default_tools()]
    assert names == ["echo", "add", "delete_record", "fail", "search_region"]
    generated = many_tools(1000)
    assert len({t["name"] for t in generated}) == 1000
    assert [t["name"] for t in generated] == sorted(t["name"] for t in generated)


@pytest.mark.parametrize("required", [False, True])
def test_missing_npm_skips_or_fails_when_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, required: bool
) -> None:
    monkeypatch.setattr(fixtures, "NODE_DIR", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    if required:
        monkeypatch.setenv("HUB_TEST_REQUIRE_NODE", "1")
        with pytest.raises(pytest.fail.Exception, match="HUB_TEST_REQUIRE_NODE"):
            fixtures.ensure_node_tools()
    else:
        monkeypatch.delenv("HUB_TEST_REQUIRE_NODE", raising=False)
        with pytest.raises(pytest.skip.Exception, match="npm is not on PATH"):
            fixtures.ensure_node_tools()
