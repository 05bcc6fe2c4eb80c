"""The sealed ``requestState`` of the 2026 approval path (DESIGN §15).

A state opens to what it was sealed with, for the tenant, deployment and agent it was sealed for,
until its expiry, under any key still in the ring; anything else opens to nothing.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from hub.core.crypto import Keyring
from hub.gateway.adapters.request_state import MAX_STATE_CHARS, RequestStates
from hub.gateway.engine.ports import StateSelection

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
EXPIRES = NOW + timedelta(minutes=15)
K1 = base64.b64encode(b"1" * 32).decode()
K2 = base64.b64encode(b"2" * 32).decode()
SELECTION = StateSelection(uuid.uuid4(), "a" * 64, "b" * 64)


@pytest.fixture
def states() -> RequestStates:
    return RequestStates(Keyring.parse(f"k1:{K1}"), uuid.uuid4(), uuid.uuid4(), uuid.uuid4())


def test_a_state_opens_to_what_it_was_sealed_with(states: RequestStates) -> None:
    sealed = states.seal(SELECTION, EXPIRES)
    assert states.open(sealed, NOW) == SELECTION
    assert states.open(sealed, EXPIRES - timedelta(seconds=1)) == SELECTION
    assert str(SELECTION.approval_id) not in sealed  # opaque: nothing readable in it
    assert "a" * 64 not in sealed
    assert states.seal(SELECTION, EXPIRES) != sealed  # a fresh nonce each time


def test_a_state_is_bound_to_its_tenant_deployment_and_agent(states: RequestStates) -> None:
    sealed = states.seal(SELECTION, EXPIRES)
    others = [
        replace(states, tenant_id=uuid.uuid4()),
        replace(states, deployment_id=uuid.uuid4()),
        replace(states, agent_id=uuid.uuid4()),
    ]
    for other in others:
        assert other.open(sealed, NOW) is None, other


def test_an_expired_state_opens_to_nothing(states: RequestStates) -> None:
    sealed = states.seal(SELECTION, EXPIRES)
    assert states.open(sealed, EXPIRES) is None
    assert states.open(sealed, EXPIRES + timedelta(days=1)) is None


def test_a_state_opens_while_its_key_is_in_the_ring(states: RequestStates) -> None:
    sealed = states.seal(SELECTION, EXPIRES)
    rotated = replace(states, keyring=Keyring.parse(f"k2:{K2},k1:{K1}", "k2"))
    assert rotated.open(sealed, NOW) == SELECTION
    retired = replace(states, keyring=Keyring.parse(f"k2:{K2}"))
    assert retired.open(sealed, NOW) is None


def test_a_changed_state_opens_to_nothing(states: RequestStates) -> None:
    sealed = states.seal(SELECTION, EXPIRES)
    version, key_id, nonce, body = sealed.split(".")
    changed = [
        f"v2.{key_id}.{nonce}.{body}",
        f"{version}.k9.{nonce}.{body}",
        f"{version}.{key_id}.{nonce[::-1]}.{body}",
        f"{version}.{key_id}.{nonce}.{body[:-2]}",
        f"{version}.{key_id}.{nonce}",
        sealed + ".x",
        sealed.replace(".", "", 1),
    ]
    # the same bytes written another way: the body's last character carries bits base64
    # ignores (217 bytes of ciphertext), and a state that reads as another must not open
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    assert len(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))) % 3 != 0
    unused = alphabet[alphabet.index(body[-1]) ^ 1]
    changed.append(f"{version}.{key_id}.{nonce}.{body[:-1]}{unused}")
    for position in range(len(sealed)):
        if sealed[position] != ".":
            flipped = "A" if sealed[position] != "A" else "B"
            changed.append(sealed[:position] + flipped + sealed[position + 1 :])
    for state in changed:
        assert states.open(state, NOW) is None, state


@pytest.mark.parametrize(
    "state",
    [None, 7, ["v1"], {"a": 1}, "", "v1", "v1...", "v1.k1.!!.!!", "v1.k1.@.@", "x" * 5000],
)
def test_what_is_not_a_state_opens_to_nothing(states: RequestStates, state: object) -> None:
    assert states.open(state, NOW) is None


def test_a_state_is_short(states: RequestStates) -> None:
    assert len(states.seal(SELECTION, EXPIRES)) < MAX_STATE_CHARS // 3
