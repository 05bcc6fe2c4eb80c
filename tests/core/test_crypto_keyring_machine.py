"""A hypothesis state machine over the keyring: keys come and go, rows stay readable and bound.

The model is a set of key materials, the active key id, and a table of rows keyed by
(tenant, credential, field) holding the plaintext and its sealed value. Rules add a key, make a key
active, write a row, rewrap one row or all of them (``hub crypto rotate``), and retire a key that no
row uses. After every step, every live row decrypts to its plaintext, and no row decrypts under the
AAD of any other (tenant, credential, field) slot.
"""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from hub.core.crypto import CredentialUnavailable, Keyring, Sealed, credential_aad

TENANTS = (uuid.UUID(int=1), uuid.UUID(int=2))
CREDENTIALS = (uuid.UUID(int=10), uuid.UUID(int=11))
FIELDS = ("secret", "refresh_token", "client_secret")
MAX_KEYS = 4

Slot = tuple[uuid.UUID, uuid.UUID, str]
SLOTS: dict[Slot, bytes] = {
    (tenant, credential, field): credential_aad(tenant, credential, field)
    for tenant in TENANTS
    for credential in CREDENTIALS
    for field in FIELDS
}

_keys = st.binary(min_size=32, max_size=32)


class KeyringMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.material: dict[str, bytes] = {}
        self.active = ""
        self.next_id = 0
        self.rows: dict[Slot, tuple[bytes, Sealed]] = {}
        self.keyring: Keyring | None = None

    # ------------------------------------------------------------ helpers

    def ring(self) -> Keyring:
        assert self.keyring is not None
        return self.keyring

    def rebuild(self) -> None:
        """Reconfigure the way an operator does: through the environment string."""
        spec = ",".join(
            f"{kid}:{base64.b64encode(key).decode()}" for kid, key in self.material.items()
        )
        self.keyring = Keyring.parse(spec, self.active)
        assert self.keyring.key_ids == tuple(self.material)
        assert self.keyring.active_key_id == self.active

    def new_key(self, key: bytes) -> str:
        key_id = f"k{self.next_id}"
        self.next_id += 1
        self.material[key_id] = key
        return key_id

    def keys_in_use(self) -> set[str]:
        return {sealed.key_id for _, sealed in self.rows.values()}

    def retirable(self) -> list[str]:
        return sorted(set(self.material) - self.keys_in_use() - {self.active})

    def inactive_in_use(self) -> list[str]:
        return sorted(self.keys_in_use() - {self.active})

    # ------------------------------------------------------------ rules

    @initialize(key=_keys)
    def first_key(self, key: bytes) -> None:
        self.active = self.new_key(key)
        self.rebuild()

    @precondition(lambda self: len(self.material) < MAX_KEYS)
    @rule(key=_keys)
    def add_key(self, key: bytes) -> None:
        self.new_key(key)
        self.rebuild()

    @rule(data=st.data())
    def make_active(self, data: st.DataObject) -> None:
        self.active = data.draw(st.sampled_from(sorted(self.material)))
        self.rebuild()

    @rule(slot=st.sampled_from(sorted(SLOTS)), plaintext=st.binary(max_size=48))
    def write_row(self, slot: Slot, plaintext: bytes) -> None:
        sealed = self.ring().encrypt(plaintext, SLOTS[slot])
        assert sealed.key_id == self.active
        self.rows[slot] = (plaintext, sealed)

    @precondition(lambda self: bool(self.rows))
    @rule(data=st.data())
    def rewrap_row(self, data: st.DataObject) -> None:
        slot = data.draw(st.sampled_from(sorted(self.rows)))
        plaintext, sealed = self.rows[slot]
        moved = self.ring().rewrap(sealed, SLOTS[slot])
        assert moved.key_id == self.active
        if sealed.key_id == self.active:
            assert moved is sealed
        else:
            assert moved.nonce != sealed.nonce
        self.rows[slot] = (plaintext, moved)

    @rule()
    def rotate_all(self) -> None:
        for slot, (plaintext, sealed) in list(self.rows.items()):
            self.rows[slot] = (plaintext, self.ring().rewrap(sealed, SLOTS[slot]))
        assert self.keys_in_use() <= {self.active}
        for slot, (_, sealed) in self.rows.items():
            assert self.ring().rewrap(sealed, SLOTS[slot]) is sealed

    @precondition(lambda self: bool(self.retirable()))
    @rule(data=st.data())
    def retire_unused_key(self, data: st.DataObject) -> None:
        del self.material[data.draw(st.sampled_from(self.retirable()))]
        self.rebuild()

    @precondition(lambda self: bool(self.inactive_in_use()))
    @rule(data=st.data())
    def ring_without_a_used_key_refuses_its_rows(self, data: st.DataObject) -> None:
        missing = data.draw(st.sampled_from(self.inactive_in_use()))
        smaller = Keyring(
            {kid: key for kid, key in self.material.items() if kid != missing}, self.active
        )
        for slot, (plaintext, sealed) in self.rows.items():
            if sealed.key_id == missing:
                with pytest.raises(CredentialUnavailable, match=r"^credential unavailable$"):
                    smaller.decrypt(sealed, SLOTS[slot])
            else:
                assert smaller.decrypt(sealed, SLOTS[slot]) == plaintext

    # ------------------------------------------------------------ invariants

    @invariant()
    def every_live_row_decrypts(self) -> None:
        for slot, (plaintext, sealed) in self.rows.items():
            assert self.ring().has(sealed.key_id)
            assert self.ring().decrypt(sealed, SLOTS[slot]) == plaintext

    @invariant()
    def nothing_decrypts_under_another_rows_aad(self) -> None:
        for slot, (_, sealed) in self.rows.items():
            for other, aad in SLOTS.items():
                if other == slot:
                    continue
                with pytest.raises(CredentialUnavailable, match=r"^credential unavailable$"):
                    self.ring().decrypt(sealed, aad)


KeyringMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestKeyringMachine = KeyringMachine.TestCase
