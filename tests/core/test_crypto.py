"""The keyring: row binding, tamper evidence, nonce freshness, rotation, strict configuration."""

from __future__ import annotations

import base64
import pickle
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from hub.core.crypto import (
    AAD_PREFIX,
    NONCE_SIZE,
    TAG_SIZE,
    CredentialUnavailable,
    Keyring,
    Sealed,
    credential_aad,
)
from hub.core.settings import ConfigError, Settings

K1 = bytes(range(32))
K2 = bytes(range(100, 132))
B64_K1 = base64.b64encode(K1).decode()
B64_K2 = base64.b64encode(K2).decode()
TENANT_A = uuid.UUID("aaaaaaaa-0000-4000-8000-000000000001")
TENANT_B = uuid.UUID("bbbbbbbb-0000-4000-8000-000000000002")
CRED_1 = uuid.UUID("11111111-0000-4000-8000-000000000001")
CRED_2 = uuid.UUID("22222222-0000-4000-8000-000000000002")
SECRET = "CANARY-" + str(uuid.UUID("cccccccc-0000-4000-8000-00000000000c"))
AAD = credential_aad(TENANT_A, CRED_1, "secret")


def ring(*ids: str, active: str | None = None) -> Keyring:
    material = {"k1": B64_K1, "k2": B64_K2}
    return Keyring.parse(",".join(f"{kid}:{material[kid]}" for kid in ids), active)


def assert_uniform(info: pytest.ExceptionInfo[CredentialUnavailable]) -> None:
    error = info.value
    assert type(error) is CredentialUnavailable
    assert str(error) == "credential unavailable"
    assert error.args == ("credential unavailable",)
    assert error.__cause__ is None
    assert error.__context__ is None
    assert SECRET not in repr(error)
    assert SECRET not in str(info.getrepr())


def flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


# ---------------------------------------------------------------- round trip and AAD


def test_str_and_bytes_round_trip() -> None:
    keyring = ring("k1")
    assert keyring.decrypt(keyring.encrypt(SECRET, AAD), AAD) == SECRET.encode()
    assert keyring.decrypt(keyring.encrypt(b"\x00\xff", AAD), AAD) == b"\x00\xff"
    assert keyring.decrypt(keyring.encrypt("", AAD), AAD) == b""


def test_sealed_value_shape() -> None:
    sealed = ring("k1").encrypt(SECRET, AAD)
    assert sealed.key_id == "k1"
    assert len(sealed.nonce) == NONCE_SIZE
    assert len(sealed.ciphertext) == len(SECRET) + TAG_SIZE
    assert SECRET.encode() not in sealed.ciphertext


def test_aad_layout_is_canonical() -> None:
    aad = credential_aad(TENANT_A, CRED_1, "refresh_token")
    assert aad == b"hub/cred/v1" + TENANT_A.bytes + CRED_1.bytes + b"\x0d" + b"refresh_token"
    assert aad.startswith(AAD_PREFIX)


@pytest.mark.parametrize("field", ["", "Secret", "1secret", "se-cret", "x" * 64, "sécret"])
def test_aad_refuses_bad_field_names(field: str) -> None:
    with pytest.raises(ValueError, match="field name"):
        credential_aad(TENANT_A, CRED_1, field)


_rows = st.tuples(st.uuids(), st.uuids(), st.from_regex(r"[a-z][a-z0-9_]{0,62}", fullmatch=True))


@given(_rows, _rows)
def test_aad_is_injective(
    first: tuple[uuid.UUID, uuid.UUID, str], second: tuple[uuid.UUID, uuid.UUID, str]
) -> None:
    assert (credential_aad(*first) == credential_aad(*second)) == (first == second)


def test_encrypt_refuses_empty_aad() -> None:
    with pytest.raises(ValueError, match="associated data"):
        ring("k1").encrypt(SECRET, b"")


def test_unencodable_plaintext_is_refused_without_echo() -> None:
    with pytest.raises(ValueError, match="UTF-8") as info:
        ring("k1").encrypt(SECRET + "\ud800", AAD)
    assert info.value.__context__ is None
    assert SECRET not in repr(info.value)


# ---------------------------------------------------------------- row swap and tampering


@pytest.mark.parametrize(
    ("tenant", "credential", "field"),
    [
        (TENANT_B, CRED_1, "secret"),
        (TENANT_A, CRED_2, "secret"),
        (TENANT_A, CRED_1, "refresh_token"),
    ],
    ids=["other_tenant", "other_credential", "other_field"],
)
def test_row_swap_fails_uniformly(tenant: uuid.UUID, credential: uuid.UUID, field: str) -> None:
    keyring = ring("k1")
    sealed = keyring.encrypt(SECRET, AAD)
    with pytest.raises(CredentialUnavailable) as info:
        keyring.decrypt(sealed, credential_aad(tenant, credential, field))
    assert_uniform(info)


@pytest.mark.parametrize("part", ["nonce", "body", "tag"])
def test_single_bit_tampering_fails_uniformly(part: str) -> None:
    keyring = ring("k1")
    sealed = keyring.encrypt(SECRET, AAD)
    body_bits = (len(sealed.ciphertext) - TAG_SIZE) * 8
    bits = {
        "nonce": [0, 7, 45, NONCE_SIZE * 8 - 1],
        "body": [0, 9, body_bits // 2, body_bits - 1],
        "tag": [body_bits + offset for offset in (0, 3, 64, TAG_SIZE * 8 - 1)],
    }[part]
    for bit in bits:
        if part == "nonce":
            tampered = Sealed(sealed.key_id, flip(sealed.nonce, bit), sealed.ciphertext)
        else:
            tampered = Sealed(sealed.key_id, sealed.nonce, flip(sealed.ciphertext, bit))
        with pytest.raises(CredentialUnavailable) as info:
            keyring.decrypt(tampered, AAD)
        assert_uniform(info)


def _malformed(sealed: Sealed) -> list[Sealed]:
    key_id, nonce, ct = sealed.key_id, sealed.nonce, sealed.ciphertext
    return [
        Sealed(key_id, nonce, ct[:-1]),
        Sealed(key_id, nonce, ct[: TAG_SIZE - 1]),
        Sealed(key_id, nonce, b""),
        Sealed(key_id, nonce[:-1], ct),
        Sealed(key_id, nonce + b"\x00", ct),
        Sealed(key_id, b"", ct),
        Sealed("k9", nonce, ct),
        Sealed("", nonce, ct),
        # Column values of the wrong type (a driver quirk) are refused, not trusted.
        Sealed(None, nonce, ct),  # type: ignore[arg-type]
        Sealed(key_id, nonce.hex(), ct),  # type: ignore[arg-type]
        Sealed(key_id, nonce, memoryview(ct)),  # type: ignore[arg-type]
    ]


def test_truncated_malformed_or_unknown_key_fails_uniformly() -> None:
    keyring = ring("k1")
    for bad in _malformed(keyring.encrypt(SECRET, AAD)):
        with pytest.raises(CredentialUnavailable) as info:
            keyring.decrypt(bad, AAD)
        assert_uniform(info)


def test_same_key_id_with_other_key_fails_uniformly() -> None:
    sealed = ring("k1").encrypt(SECRET, AAD)
    impostor = Keyring.parse(f"k1:{B64_K2}")
    with pytest.raises(CredentialUnavailable) as info:
        impostor.decrypt(sealed, AAD)
    assert_uniform(info)


def test_a_check_value_tells_the_key_under_an_id_from_any_other() -> None:
    """``/readyz`` compares a stored check value with the ring's key (stop 53): the same key
    matches, another key under the same id, the same key under another id, a value with one
    bit flipped or cut short do not; two check values differ (a fresh nonce) and hold neither
    key's bytes."""
    value = ring("k1").check_value("k1")
    assert len(value) == 28
    assert value != ring("k1").check_value("k1")
    assert K1 not in value
    assert B64_K1.encode() not in value
    assert ring("k1", "k2").matches("k1", value)
    assert not Keyring.parse(f"k1:{B64_K2}").matches("k1", value)
    assert not Keyring.parse(f"k2:{B64_K1}").matches("k2", value)  # bound to its key id
    assert not ring("k2").matches("k1", value)  # an id not in the ring
    assert not ring("k1").matches("k1", flip(value, 200))
    assert not ring("k1").matches("k1", value[:-1])


def test_a_key_is_proven_by_an_opened_value_and_disproven_by_a_failed_one() -> None:
    """What ``/readyz`` may record as the database's key (stop 53): opened, and never failed."""
    keyring = ring("k1", "k2")
    assert not keyring.proven("k1")
    keyring.decrypt(keyring.encrypt(SECRET, AAD), AAD)
    assert keyring.proven("k1")
    assert not keyring.proven("k2")  # only what was opened
    impostor = Keyring.parse(f"k1:{B64_K2}")
    impostor.decrypt(impostor.encrypt(SECRET, AAD), AAD)  # its own values open
    with pytest.raises(CredentialUnavailable):
        impostor.decrypt(ring("k1").encrypt(SECRET, AAD), AAD)  # the stored ones do not
    assert not impostor.proven("k1")


# ---------------------------------------------------------------- nonces


def test_100k_encryptions_have_distinct_nonces() -> None:
    keyring = ring("k1")
    nonces = {keyring.encrypt(b"x", AAD).nonce for _ in range(100_000)}
    assert len(nonces) == 100_000


def test_same_plaintext_encrypts_differently_twice() -> None:
    keyring = ring("k1")
    first, second = keyring.encrypt(SECRET, AAD), keyring.encrypt(SECRET, AAD)
    assert first.nonce != second.nonce
    assert first.ciphertext != second.ciphertext
    assert keyring.decrypt(first, AAD) == keyring.decrypt(second, AAD) == SECRET.encode()


# ---------------------------------------------------------------- rotation


def test_rotation_round_trip() -> None:
    old = ring("k1").encrypt(SECRET, AAD)
    rotated = ring("k1", "k2", active="k2")
    assert rotated.active_key_id == "k2"
    assert rotated.decrypt(old, AAD) == SECRET.encode()

    moved = rotated.rewrap(old, AAD)
    assert moved.key_id == "k2"
    assert moved.nonce != old.nonce
    assert rotated.decrypt(moved, AAD) == SECRET.encode()
    assert rotated.rewrap(moved, AAD) is moved

    retired = ring("k2")
    with pytest.raises(CredentialUnavailable) as info:
        retired.decrypt(old, AAD)
    assert_uniform(info)
    assert retired.decrypt(moved, AAD) == SECRET.encode()


def test_rewrap_keeps_the_row_binding() -> None:
    old = ring("k1").encrypt(SECRET, AAD)
    rotated = ring("k1", "k2", active="k2")
    other = credential_aad(TENANT_B, CRED_1, "secret")
    with pytest.raises(CredentialUnavailable) as info:
        rotated.rewrap(old, other)
    assert_uniform(info)
    with pytest.raises(CredentialUnavailable):
        rotated.decrypt(rotated.rewrap(old, AAD), other)


def test_new_encryptions_use_the_active_key() -> None:
    assert ring("k1", "k2").encrypt(SECRET, AAD).key_id == "k1"
    assert ring("k1", "k2", active="k2").encrypt(SECRET, AAD).key_id == "k2"


# ---------------------------------------------------------------- configuration


def test_parse_tolerates_whitespace_and_reports_ids() -> None:
    keyring = Keyring.parse(f"  k1:{B64_K1} ,\n k2 : {B64_K2}\t", " k2 ")
    assert keyring.key_ids == ("k1", "k2")
    assert keyring.active_key_id == "k2"
    assert keyring.has("k1")
    assert not keyring.has("k3")


MALFORMED = {
    "bad_base64": (f"k1:{B64_K1[:-2]}!=", "not canonical standard base64", None),
    "urlsafe_alphabet": ("k1:" + base64.urlsafe_b64encode(b"\xfb" * 32).decode(), "base64", None),
    # Decodes to K1 with a spare trailing bit set: one key must have exactly one spelling.
    "non_canonical_bits": (f"k1:{B64_K1[:-2]}9=", "not canonical", None),
    "inner_whitespace": (f"k1:{B64_K1[:20]} {B64_K1[20:]}", "base64", None),
    "short_key_16": ("k1:" + base64.b64encode(b"s" * 16).decode(), "16 bytes", None),
    "long_key_33": ("k1:" + base64.b64encode(b"l" * 33).decode(), "33 bytes", None),
    "missing_key": ("k1:", "missing", None),
    "empty_kid": (f":{B64_K1}", "key id is empty", None),
    "bad_kid_chars": (f"k/1:{B64_K1}", "key id is invalid", None),
    "long_kid": (f"{'k' * 33}:{B64_K1}", "key id is invalid", None),
    "kid_is_material": (f"{B64_K2}:{B64_K1}", "key id is invalid", None),
    "duplicate_kid": (f"k1:{B64_K1},k1:{B64_K2}", "entry 2 (key id 'k1'): duplicate", None),
    "active_not_in_ring": (f"k1:{B64_K1}", "'k9' is not in", "k9"),
    "active_invalid": (f"k1:{B64_K1}", "HUB_ACTIVE_KEY_ID is not a valid key id", B64_K2),
    "active_empty": (f"k1:{B64_K1}", "HUB_ACTIVE_KEY_ID is not a valid key id", ""),
    "empty_string": ("", "is empty", None),
    "blank_string": (" , ", "entry 1 is empty", None),
    "stray_comma": (f"k1:{B64_K1},", "entry 2 is empty", None),
    "no_colon": (B64_K1, "entry 1 has no ':'", None),
}


@pytest.mark.parametrize(("keys", "expected", "active"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_keyring_is_refused_without_echo(
    keys: str, expected: str, active: str | None
) -> None:
    with pytest.raises(ConfigError) as info:
        Keyring.parse(keys, active)
    message = str(info.value)
    assert expected in message
    for material in (B64_K1, B64_K2, B64_K1[:20], B64_K2[:20]):
        assert material not in message
        assert material not in repr(info.value)
    assert info.value.__context__ is None


def test_malformed_entry_names_its_position() -> None:
    with pytest.raises(ConfigError, match=r"entry 2 \(key id 'k2'\): the key decodes to 16"):
        Keyring.parse(f"k1:{B64_K1},k2:" + base64.b64encode(b"s" * 16).decode())


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ConfigError, match="31 bytes"):
        Keyring({"k1": K1[:31]})
    with pytest.raises(ConfigError, match="holds no key"):
        Keyring({})
    with pytest.raises(ConfigError, match="key id is invalid"):
        Keyring({"k 1": K1})
    assert Keyring({"k1": K1, "k2": K2}, "k2").active_key_id == "k2"


def test_from_settings() -> None:
    settings = Settings(
        env="development",
        encryption_keys=SecretStr(f"k1:{B64_K1},k2:{B64_K2}"),
        active_key_id="k2",
    )
    keyring = Keyring.from_settings(settings)
    assert keyring.key_ids == ("k1", "k2")
    assert keyring.active_key_id == "k2"
    assert (
        Keyring.from_settings(settings.model_copy(update={"active_key_id": None})).active_key_id
        == "k1"
    )


def test_from_settings_without_keys_is_refused() -> None:
    settings = Settings(env="development", encryption_keys=None, active_key_id=None)
    with pytest.raises(ConfigError, match="HUB_ENCRYPTION_KEYS is not set"):
        Keyring.from_settings(settings)


# ---------------------------------------------------------------- nothing leaks


def test_reprs_show_no_key_material() -> None:
    keyring = ring("k1", "k2", active="k2")
    sealed = keyring.encrypt(SECRET, AAD)
    texts = [repr(keyring), str(keyring), repr(sealed), str(sealed), repr(keyring.key_ids)]
    for text in texts:
        for forbidden in (B64_K1, B64_K2, K1.hex(), K2.hex(), repr(K1), repr(K2), SECRET):
            assert forbidden not in text
    assert repr(keyring) == "Keyring(key_ids=('k1', 'k2'), active_key_id='k2')"
    assert repr(sealed) == (
        f"Sealed(key_id='k2', nonce=<12 bytes>, ciphertext=<{len(SECRET) + TAG_SIZE} bytes>)"
    )


def test_keyring_cannot_be_serialized() -> None:
    with pytest.raises(TypeError, match="cannot be serialized"):
        pickle.dumps(ring("k1"))


def test_uniform_error_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(CredentialUnavailable()))  # noqa: S301 (our own bytes)
    assert type(error) is CredentialUnavailable
    assert str(error) == "credential unavailable"


def test_a_value_that_does_not_open_under_its_key_id_is_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A restore with a keyring whose k1 is not the key the rows were sealed with: every call
    failed ``credential_unavailable`` and nothing said why. One warning a key id a minute, naming
    the key id and nothing of the key, the value or the plaintext."""
    sealed = ring("k1").encrypt(SECRET, AAD)
    wrong = Keyring.parse(f"k1:{B64_K2}", None)  # another key under the same id
    with caplog.at_level("WARNING", logger="hub.crypto"):
        for _ in range(3):
            with pytest.raises(CredentialUnavailable) as info:
                wrong.decrypt(sealed, AAD)
            assert_uniform(info)
    warnings = [r.getMessage() for r in caplog.records if r.name == "hub.crypto"]
    assert len(warnings) == 1, warnings
    assert "key id k1 does not open with the keyring's k1" in warnings[0]
    for secret in (SECRET, B64_K1, B64_K2, sealed.ciphertext.hex()):
        assert secret not in caplog.text
