"""Handshake sessions kept between tool calls (``hub.mcp.client.keeper``), against real peers.

A call naming a ``reuse`` partition on a client with a keeper leaves its session open; the next
call of the same partition, URL, pin, scope, bearer and offer resumes it with ``tools/call`` alone
and carries on its request ids. Anything else (another bearer, partition or version, a failure, an
expired or surplus session) gets or leaves a session of its own, and the sessions the hub stops
using are deleted.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.egress import Fetcher
from hub.mcp import LEGACY_VERSIONS, McpClient, McpError, SessionKeeper
from hub.mcp.client.keeper import KeptSession
from tests.mcp.conftest import CLIENT_INFO
from tests.mcp.support import TOOLS, call, discover
from tests.peers.fixtures import HandmadePeerStarter, SdkPeerStarter
from tests.peers.handmade import HandmadePeer
from tests.peers.handmade_wire import Reply

PARTITION = "deployment/agent/server"
OPENED = ["initialize", "notifications/initialized", "tools/call"]  # a call in a new session
REOPENED = ["tools/call", *OPENED]  # a resumed session refused (it ran nothing), then a new one


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def keeper(clock: Clock) -> SessionKeeper:
    return SessionKeeper(idle_s=60, clock=clock)


@pytest.fixture
def keeping(fetcher: Fetcher, keeper: SessionKeeper) -> McpClient:
    return McpClient(fetcher, client_info=CLIENT_INFO, keeper=keeper)


async def _legacy(handmade_peer: HandmadePeerStarter, **knobs: Any) -> HandmadePeer:
    peer: HandmadePeer = await handmade_peer(era="legacy", tools=TOOLS, **knobs)
    return peer


def _deletes(peer: HandmadePeer) -> int:
    return sum(r.http_method == "DELETE" for r in peer.requests)


def _methods(peer: HandmadePeer, since: int = 0) -> list[str]:
    return [r.rpc_method or r.http_method for r in peer.requests[since:]]


async def _echo(client: McpClient, peer: HandmadePeer, **options: Any) -> None:
    options.setdefault("era_hint", "legacy")
    done = await call(client, peer, "echo", {"text": "hi"}, **options)
    assert done.result["structuredContent"] == {"text": "hi"}


# ---------------------------------------------------------------------- the keeper alone
def _kept(version: str = "2025-11-25") -> KeptSession:
    return KeptSession("s", version, itertools.count(1))


def test_every_field_of_the_key_separates_sessions(keeper: SessionKeeper) -> None:
    base: list[str | None] = [
        "p",
        "http://127.0.0.1/mcp",
        "http://127.0.0.1",
        "tenant",
        "secret",
        "2025-11-25",
    ]

    def key(fields: list[str | None]) -> bytes:
        partition, url, pin, scope, bearer, offer = fields
        return keeper.key(str(partition), str(url), str(pin), scope, bearer, str(offer))

    keys = {key(base)}
    for index, other in enumerate(["q", "http://127.0.0.1/x", "http://127.0.0.2", None, None, "v"]):
        changed = list(base)
        changed[index] = other
        keys.add(key(changed))
    assert len(keys) == 7
    assert key(base) == key(base)
    assert b"secret" not in key(base)
    other_process = SessionKeeper(idle_s=60)
    assert other_process.key("p", "u", "o", None, "secret", "v") != keeper.key(
        "p", "u", "o", None, "secret", "v"
    )


def test_take_hands_out_the_newest_live_session_and_the_expired_ones(
    keeper: SessionKeeper, clock: Clock
) -> None:
    old, newer, newest = _kept(), _kept(), _kept()
    assert keeper.give(b"k", old)
    clock.now += 61
    assert keeper.give(b"k", newer)
    assert keeper.give(b"k", newest)
    taken, expired = keeper.take(b"k")
    assert taken is newest
    assert expired == [old]
    assert keeper.take(b"k") == (newer, [])
    assert keeper.take(b"k") == (None, [])
    assert keeper.take(b"never") == (None, [])
    assert keeper.events == {
        "resumed": 2,
        "kept": 3,
        "surplus": 0,
        "expired": 1,
        "forgotten": 0,
        "lost": 0,
    }


def test_a_key_keeps_at_most_per_key_and_the_keeper_at_most_keys(clock: Clock) -> None:
    keeper = SessionKeeper(idle_s=60, per_key=2, keys=2, clock=clock)
    assert keeper.give(b"a", _kept())
    assert keeper.give(b"a", _kept())
    assert not keeper.give(b"a", _kept())  # the caller deletes it
    assert keeper.give(b"b", _kept())
    keeper.take(b"a")  # "a" used last: "b" is the least recently used key
    assert keeper.give(b"c", _kept())
    assert keeper.take(b"b") == (None, [])  # forgotten
    assert keeper.take(b"a")[0] is not None
    assert keeper.take(b"c")[0] is not None
    assert keeper.idle_count() == 0
    assert keeper.events == {
        "resumed": 3,
        "kept": 4,
        "surplus": 1,
        "expired": 0,
        "forgotten": 1,
        "lost": 0,
    }


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["give", "take", "wait"]), st.sampled_from([b"a", b"b", b"c"])),
        max_size=40,
    )
)
def test_the_idle_count_the_metrics_get_is_the_sessions_kept(
    steps: list[tuple[str, bytes]],
) -> None:
    """Kept as a running total (read on every change): after any sequence of gives, takes,
    expiries, surplus and forgotten keys it is the number of sessions the keeper holds."""
    clock = Clock()
    seen: list[int] = []
    keeper = SessionKeeper(
        idle_s=60, per_key=2, keys=2, clock=clock, on_change=lambda idle, _: seen.append(idle)
    )
    for step, key in steps:
        if step == "give":
            keeper.give(key, _kept())
        elif step == "take":
            keeper.take(key)
        else:
            clock.now += 45  # two waits expire what was given before them
        held = sum(len(sessions) for sessions in keeper._idle.values())
        assert keeper.idle_count() == held
        assert seen[-1] == held or step == "wait"


def test_bad_bounds_are_refused_and_reprs_hold_no_session_id() -> None:
    for idle_s, per_key, keys in ((0, 1, 1), (1, 0, 1), (1, 1, 0)):
        with pytest.raises(ValueError, match="idle_s must be positive"):
            SessionKeeper(idle_s=idle_s, per_key=per_key, keys=keys)
    kept = KeptSession("session-id-42", "2025-11-25", itertools.count(1))
    assert "session-id-42" not in repr(kept)


# ---------------------------------------------------------------------- against the handmade peer
async def test_a_second_call_resumes_the_session_with_tools_call_alone(
    handmade_peer: HandmadePeerStarter, keeping: McpClient
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer) == OPENED
    [session_id] = peer.sessions
    for _ in range(3):
        seen = len(peer.requests)
        await _echo(keeping, peer, reuse=PARTITION)
        assert _methods(peer, seen) == ["tools/call"]
    calls = peer.rpc_requests("tools/call")
    assert {r.headers["mcp-session-id"] for r in calls} == {session_id}
    assert {r.headers["mcp-protocol-version"] for r in calls} == {LEGACY_VERSIONS[0]}
    ids = [r.rpc_id for r in peer.rpc_requests() if r.rpc_id is not None]
    assert len(ids) == len(set(ids)) == 5  # no request id used twice within the session
    assert _deletes(peer) == 0
    assert list(peer.sessions) == [session_id]


async def test_without_a_partition_or_a_keeper_every_call_has_its_own_session(
    handmade_peer: HandmadePeerStarter, keeping: McpClient, client: McpClient
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer)
    await _echo(client, peer, reuse=PARTITION)
    assert _methods(peer) == [*OPENED, "DELETE"] * 2
    assert peer.sessions == {}


async def test_another_bearer_partition_or_version_opens_a_session_of_its_own(
    handmade_peer: HandmadePeerStarter, keeping: McpClient
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer, reuse=PARTITION, bearer="first-secret")
    await _echo(keeping, peer, reuse=PARTITION, bearer="rotated-secret")
    await _echo(keeping, peer, reuse="another/agent/server", bearer="first-secret")
    await _echo(
        keeping, peer, reuse=PARTITION, bearer="first-secret", protocol_version="2025-06-18"
    )
    assert peer.count("initialize") == 4
    assert len(peer.sessions) == 4
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION, bearer="rotated-secret")
    assert _methods(peer, seen) == ["tools/call"]
    assert peer.requests[-1].headers["authorization"] == "Bearer rotated-secret"


async def test_a_session_the_server_forgot_is_opened_again_and_the_call_runs_once(
    handmade_peer: HandmadePeerStarter, keeping: McpClient
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer, reuse=PARTITION)
    peer.logic.sessions.clear()  # the server restarted or expired it
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION)
    # the 404'd tools/call ran nothing; one new session, one call that ran
    assert _methods(peer, seen) == REOPENED
    assert len(peer.sessions) == 1
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer, seen) == ["tools/call"]  # the new session is the one kept
    assert keeping.keeper is not None
    assert keeping.keeper.events["lost"] == 1
    assert keeping.keeper.events["resumed"] == 2


async def test_a_resumed_session_refused_with_400_starts_over_once(
    handmade_peer: HandmadePeerStarter, keeping: McpClient
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer, reuse=PARTITION)
    peer.override("tools/call", Reply(400), times=1)
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer, seen) == REOPENED
    peer.override("tools/call", Reply(400))  # refused again after the new initialize: it fails
    with pytest.raises(McpError):
        await _echo(keeping, peer, reuse=PARTITION)
    assert peer.requests[-1].http_method == "DELETE"  # and its session is deleted


async def test_a_failed_call_deletes_its_session_and_an_answered_error_keeps_it(
    handmade_peer: HandmadePeerStarter, keeping: McpClient
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer, reuse=PARTITION)
    with pytest.raises(McpError) as caught:  # a JSON-RPC error: the session answered properly
        await call(keeping, peer, "no_such_tool", {}, era_hint="legacy", reuse=PARTITION)
    assert caught.value.reason == "tool_error"
    seen = len(peer.requests)
    peer.override("tools/call", Reply(500, b"<html>boom</html>"), times=1)
    with pytest.raises(McpError):
        await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer, seen) == ["tools/call", "DELETE"]
    assert peer.sessions == {}
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer, seen) == OPENED


async def test_an_expired_session_is_deleted_by_the_next_call_which_opens_a_new_one(
    handmade_peer: HandmadePeerStarter, keeping: McpClient, clock: Clock
) -> None:
    peer = await _legacy(handmade_peer)
    await _echo(keeping, peer, reuse=PARTITION)
    [old] = peer.sessions
    clock.now += 60
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer, seen) == [*OPENED, "DELETE"]
    assert peer.requests[-1].headers["mcp-session-id"] == old
    assert old not in peer.sessions
    assert len(peer.sessions) == 1


async def test_concurrent_calls_hold_a_session_each_and_the_surplus_is_deleted(
    handmade_peer: HandmadePeerStarter, fetcher: Fetcher, clock: Clock
) -> None:
    keeping = McpClient(
        fetcher, client_info=CLIENT_INFO, keeper=SessionKeeper(idle_s=60, per_key=2, clock=clock)
    )
    peer = await _legacy(handmade_peer)
    await asyncio.gather(*(_echo(keeping, peer, reuse=PARTITION) for _ in range(3)))
    assert peer.count("initialize") == 3
    assert _deletes(peer) == 1
    assert len(peer.sessions) == 2
    seen = len(peer.requests)
    await asyncio.gather(*(_echo(keeping, peer, reuse=PARTITION) for _ in range(2)))
    assert _methods(peer, seen) == ["tools/call", "tools/call"]
    sessions = {r.headers["mcp-session-id"] for r in peer.requests[seen:]}
    assert sessions == set(peer.sessions)  # each call had a session to itself


async def test_a_server_without_session_ids_is_called_without_a_new_handshake(
    handmade_peer: HandmadePeerStarter, keeping: McpClient
) -> None:
    peer = await _legacy(handmade_peer, legacy_sessions=False)
    await _echo(keeping, peer, reuse=PARTITION)
    seen = len(peer.requests)
    await _echo(keeping, peer, reuse=PARTITION)
    assert _methods(peer, seen) == ["tools/call"]
    [resumed] = peer.requests[seen:]
    assert "mcp-session-id" not in resumed.headers
    assert resumed.headers["mcp-protocol-version"] == LEGACY_VERSIONS[0]


async def test_discovery_never_keeps_a_session(
    handmade_peer: HandmadePeerStarter, keeping: McpClient, keeper: SessionKeeper
) -> None:
    peer = await _legacy(handmade_peer)
    await discover(keeping, peer, era_hint="legacy")
    assert peer.requests[-1].http_method == "DELETE"
    assert peer.sessions == {}
    assert keeper.idle_count() == 0


# ---------------------------------------------------------------------- against the SDK server
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sse", "json", "stateless"])
async def test_the_sdk_server_answers_resumed_sessions_in_every_mode(
    sdk_peer: SdkPeerStarter, keeping: McpClient, mode: str
) -> None:
    peer = await sdk_peer(mode)
    counts = []
    for n in range(4):
        done = await keeping.call_tool(
            peer.url,
            "add",
            {"a": n},
            pin=peer.url,
            bearer=None,
            deadline_s=15,
            era_hint="legacy",
            reuse=PARTITION,
        )
        assert done.era == "legacy"
        assert done.result["structuredContent"] == {"a": n}
        counts.append(done.requests)
    assert counts == [3, 1, 1, 1]  # initialize, initialized, call; then the call alone
