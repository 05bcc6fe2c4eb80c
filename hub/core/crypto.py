"""Secrets at rest: the AES-256-GCM keyring, the sealed-value format and the credential AAD.

SECURITY.md §2 and DESIGN.md §9 describe the requirements; this module is the primitive layer.
It knows nothing about tables: the credentials domain stores a :class:`Sealed` value and builds
the associated data with :func:`credential_aad`.

Format
    Every encrypted field is a :class:`Sealed` value, stored as three columns:

    * ``key_id``: the keyring entry that encrypted it (``^[A-Za-z0-9_-]{1,32}$``), so decryption
      picks the right key without trial decryption (the idea of Vault transit's ``vault:v1:``);
    * ``nonce``: 12 bytes from :func:`os.urandom`, fresh for every encryption (the random 96-bit
      IV construction of NIST SP 800-38D §8.2.2; no (key, nonce) pair is ever reused on purpose);
    * ``ciphertext``: the AES-256-GCM ciphertext followed by its 16-byte tag
      (``AESGCM.encrypt``'s output, unchanged).

Associated data (AAD)
    A ciphertext is bound to the row and column it belongs to, so copying it into another
    tenant's row, another credential or another field makes it fail to decrypt. The encoding is
    canonical and injective (every part before the field name has a fixed width)::

        b"hub/cred/v1"                   11 bytes: format ("hub credential"), version 1
        tenant_id.bytes                  16 bytes: the UUID in big-endian (RFC 9562) order
        credential_id.bytes              16 bytes
        len(field)                        1 byte: length of the field name in bytes (1..63)
        field.encode("ascii")            the field name, ``[a-z][a-z0-9_]{0,62}``

    The credential id is generated (uuid4) by the application *before* encrypting. A change to
    this layout is a new version prefix (``hub/cred/v2``), never an edit of v1.

Rotation (Vault transit semantics)
    The ring comes from ``HUB_ENCRYPTION_KEYS`` (``kid:base64(32 bytes),kid2:…``) and
    ``HUB_ACTIVE_KEY_ID`` (default: the first key). New encryptions always use the active key;
    every key in the ring still decrypts. To rotate: add a key, make it active, restart; old rows
    keep decrypting under their own key id. :meth:`Keyring.rewrap` re-encrypts one value under the
    active key with a fresh nonce and the *same* AAD (``hub crypto rotate`` does that for every row
    not under the active key). A key is removed from the ring only once no stored row names it;
    that removal is our ``min_decryption_version``. Rotate a key well before 2**32 encryptions.

Errors
    Every decryption failure (unknown key id, wrong key, wrong AAD, tampered or truncated nonce,
    ciphertext or tag) raises the same :class:`CredentialUnavailable` with the same fixed message
    and no cause or context: callers cannot tell the cases apart, and nothing about the plaintext
    or the key leaks. A keyring that cannot be used raises :class:`hub.core.settings.ConfigError`
    naming the problem and the entry position or key id, never the key material. A key id is only
    echoed once it matches the key-id pattern (at most 32 characters, so it cannot be a pasted
    44-character key).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hub.core.settings import ConfigError, Settings

log = logging.getLogger("hub.crypto")

#: at most one warning a key id this often: a wrong key fails every value sealed under it
TAG_WARNING_EVERY_S = 60.0

__all__ = [
    "AAD_PREFIX",
    "KEY_SIZE",
    "NONCE_SIZE",
    "TAG_SIZE",
    "CredentialUnavailable",
    "Keyring",
    "Sealed",
    "credential_aad",
    "rewrapped_columns",
    "row_aad",
]

KEY_SIZE: Final = 32
NONCE_SIZE: Final = 12
TAG_SIZE: Final = 16
AAD_PREFIX: Final = b"hub/cred/v1"

_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_FIELD = re.compile(r"[a-z][a-z0-9_]{0,62}")
_KEYS_VAR = "HUB_ENCRYPTION_KEYS"
_ACTIVE_VAR = "HUB_ACTIVE_KEY_ID"
_KEY_ID_RULE = "1-32 characters from A-Z a-z 0-9 _ -"


class CredentialUnavailable(Exception):
    """A stored secret cannot be decrypted; one error, one fixed message, for every cause."""

    def __init__(self) -> None:
        super().__init__("credential unavailable")

    def __reduce__(self) -> tuple[type[CredentialUnavailable], tuple[()]]:
        return (type(self), ())


@dataclass(frozen=True, slots=True, repr=False)
class Sealed:
    """One encrypted field: the key id, the 12-byte nonce, and the ciphertext with its tag."""

    key_id: str
    nonce: bytes
    ciphertext: bytes

    def __repr__(self) -> str:
        return (
            f"Sealed(key_id={self.key_id!r}, nonce=<{len(self.nonce)} bytes>, "
            f"ciphertext=<{len(self.ciphertext)} bytes>)"
        )


def credential_aad(tenant_id: uuid.UUID, credential_id: uuid.UUID, field: str) -> bytes:
    """The associated data binding a credential field to its tenant, credential and column."""
    return row_aad(AAD_PREFIX, tenant_id, credential_id, field)


_PREFIX = re.compile(rb"hub/[a-z][a-z0-9-]{0,30}/v[0-9]{1,3}")


def row_aad(prefix: bytes, tenant_id: uuid.UUID, row_id: uuid.UUID, field: str) -> bytes:
    """The associated data binding an encrypted field of any table to its row and column.

    The same layout as the credential AAD above with another format prefix (``hub/<table>/vN``):
    a value sealed for one table never opens as another's, even for equal ids. The prefix is
    fixed-width per table, so the encoding stays injective within a table.
    """
    if not _PREFIX.fullmatch(prefix):
        raise ValueError("an AAD prefix looks like b'hub/<name>/v<n>'")
    if not _FIELD.fullmatch(field):
        raise ValueError("a credential field name must match [a-z][a-z0-9_]{0,62}")
    name = field.encode("ascii")
    return b"".join((prefix, tenant_id.bytes, row_id.bytes, len(name).to_bytes(1, "big"), name))


class Keyring:
    """The AES-256-GCM keys by id, and the id that new encryptions use. Immutable."""

    __slots__ = ("_active_key_id", "_aeads", "_opened", "_tag_warned")

    def __init__(self, keys: Mapping[str, bytes], active_key_id: str | None = None) -> None:
        if not keys:
            _refuse(f"{_KEYS_VAR} holds no key")
        aeads: dict[str, AESGCM] = {}
        for position, (key_id, key) in enumerate(keys.items(), start=1):
            _check_key_id(key_id, position)
            if len(key) != KEY_SIZE:
                _refuse(
                    f"{_where(position, key_id)}: the key is {len(key)} bytes; "
                    f"AES-256 needs exactly {KEY_SIZE}"
                )
            aeads[key_id] = AESGCM(bytes(key))
        self._aeads: Final = aeads
        self._tag_warned: dict[str, float] = {}
        self._opened: set[str] = set()  # key ids a stored value was opened under
        self._active_key_id: Final = _resolve_active(active_key_id, tuple(aeads))

    @classmethod
    def parse(cls, encryption_keys: str, active_key_id: str | None = None) -> Keyring:
        """Build the ring from ``kid:base64(32 bytes),kid2:…`` and an optional active key id."""
        if not encryption_keys.strip():
            _refuse(f"{_KEYS_VAR} is empty; expected 'kid:base64(32 bytes),kid2:...'")
        keys: dict[str, bytes] = {}
        for position, entry in enumerate(encryption_keys.split(","), start=1):
            key_id, key = _parse_entry(entry.strip(), position)
            if key_id in keys:
                _refuse(f"{_where(position, key_id)}: duplicate key id")
            keys[key_id] = key
        return cls(keys, active_key_id)

    @classmethod
    def from_settings(cls, settings: Settings) -> Keyring:
        """The ring configured by ``HUB_ENCRYPTION_KEYS`` and ``HUB_ACTIVE_KEY_ID``."""
        if settings.encryption_keys is None:
            _refuse(f"{_KEYS_VAR} is not set; the hub does not run without an encryption keyring")
        return cls.parse(settings.encryption_keys.get_secret_value(), settings.active_key_id)

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id in the ring, in configuration order."""
        return tuple(self._aeads)

    @property
    def active_key_id(self) -> str:
        """The key id new encryptions use."""
        return self._active_key_id

    def has(self, key_id: str) -> bool:
        """Whether values sealed under ``key_id`` can be decrypted by this ring."""
        return key_id in self._aeads

    def encrypt(self, plaintext: str | bytes, aad: bytes) -> Sealed:
        """Seal ``plaintext`` (a str is UTF-8 encoded) under the active key and a fresh nonce."""
        if not aad:
            raise ValueError("encryption needs associated data binding the value to its row")
        data = _utf8(plaintext) if isinstance(plaintext, str) else plaintext
        nonce = os.urandom(NONCE_SIZE)
        ciphertext = self._aeads[self._active_key_id].encrypt(nonce, data, aad)
        return Sealed(self._active_key_id, nonce, ciphertext)

    def decrypt(self, sealed: Sealed, aad: bytes) -> bytes:
        """The plaintext of ``sealed``; :class:`CredentialUnavailable` on any failure."""
        plaintext = self._open(sealed, aad)
        if plaintext is None:
            raise CredentialUnavailable from None
        return plaintext

    def rewrap(self, sealed: Sealed, aad: bytes) -> Sealed:
        """``sealed`` re-encrypted under the active key with a new nonce and the same AAD.

        A value already under the active key is returned unchanged (not re-verified), so running
        rotation twice is a no-op. A value that does not decrypt raises
        :class:`CredentialUnavailable`. The plaintext never leaves this call.
        """
        if sealed.key_id == self._active_key_id:
            return sealed
        return self.encrypt(self.decrypt(sealed, aad), aad)

    def check_value(self, key_id: str) -> bytes:
        """A value that tells this ring's key under ``key_id`` from any other: a fresh nonce and
        the AES-GCM tag of nothing under that key (a GMAC), bound to the key id. It reveals
        nothing of the key; :meth:`matches` checks it (``/readyz`` against the stored one)."""
        nonce = os.urandom(NONCE_SIZE)
        return nonce + self._aeads[key_id].encrypt(nonce, b"", _check_aad(key_id))

    def matches(self, key_id: str, check_value: bytes) -> bool:
        """Whether ``check_value`` was made by :meth:`check_value` with this ring's key under
        ``key_id`` (False for a key id not in the ring, or a malformed value)."""
        aead = self._aeads.get(key_id)
        if aead is None or len(check_value) != NONCE_SIZE + TAG_SIZE:
            return False
        nonce, tag = check_value[:NONCE_SIZE], check_value[NONCE_SIZE:]
        try:
            aead.decrypt(nonce, tag, _check_aad(key_id))
        except InvalidTag:
            return False
        return True

    def _open(self, sealed: Sealed, aad: bytes) -> bytes | None:
        # Returns None instead of raising so that the uniform error has no __context__. The
        # fields come from database columns, so their types are checked, not trusted.
        key_id: object = sealed.key_id
        if not isinstance(key_id, str):
            return None
        aead = self._aeads.get(key_id)
        if aead is None or not _well_formed(sealed):
            return None
        try:
            plaintext = aead.decrypt(sealed.nonce, sealed.ciphertext, aad)
        except InvalidTag:
            self._warn_tag(key_id)
            return None
        if key_id not in self._opened:
            self._opened.add(key_id)
        return plaintext

    def proven(self, key_id: str) -> bool:
        """Whether this ring's key under ``key_id`` is the one its values were sealed with, as
        far as this process saw: a value under it opened, and none failed its tag. What
        ``/readyz`` records as the database's key (:mod:`hub.health.secret_checks`): a replica
        with another key under the id opens none of the stored values, so it records nothing."""
        return key_id in self._opened and key_id not in self._tag_warned

    def _warn_tag(self, key_id: str) -> None:
        """Say once a minute a key id which values do not open under: after a restore with a
        keyring whose key under that id is not the one they were sealed with, every call failed
        ``credential_unavailable`` with no line in the log (an upgrade walk, stop 52)."""
        now = time.monotonic()
        last = self._tag_warned.get(key_id)
        if last is not None and now - last < TAG_WARNING_EVERY_S:
            return
        self._tag_warned[key_id] = now
        log.warning(
            "keyring: a value sealed under key id %s does not open with the keyring's %s: a "
            "different key under that id (a keyring not the one it was sealed with), or a value "
            "changed or moved outside the hub",
            key_id,
            key_id,
        )

    def __repr__(self) -> str:
        return f"Keyring(key_ids={self.key_ids!r}, active_key_id={self._active_key_id!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Keyring holds key material and cannot be serialized")


def _check_aad(key_id: str) -> bytes:
    # no row's AAD starts like this (theirs are b"hub/<table>/v<n>" and 32 bytes of ids)
    return b"hub/key-check/v1:" + key_id.encode("ascii")


def _well_formed(sealed: Sealed) -> bool:
    return (
        isinstance(sealed.nonce, bytes)
        and len(sealed.nonce) == NONCE_SIZE
        and isinstance(sealed.ciphertext, bytes)
        and len(sealed.ciphertext) >= TAG_SIZE
    )


def _utf8(text: str) -> bytes:
    # A UnicodeEncodeError carries the whole string in its args: never let it escape.
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    raise ValueError("the plaintext is not encodable as UTF-8 (lone surrogate)")


def _refuse(message: str) -> NoReturn:
    raise ConfigError(message)


def _where(position: int, key_id: str | None = None) -> str:
    where = f"{_KEYS_VAR} entry {position}"
    return f"{where} (key id {key_id!r})" if key_id is not None else where


def _check_key_id(key_id: str, position: int) -> None:
    if not key_id:
        _refuse(f"{_where(position)}: the key id is empty")
    if not _KEY_ID.fullmatch(key_id):
        # Not echoed: a malformed id may be key material pasted in the wrong place.
        _refuse(f"{_where(position)}: the key id is invalid ({_KEY_ID_RULE})")


def _parse_entry(entry: str, position: int) -> tuple[str, bytes]:
    if not entry:
        _refuse(f"{_where(position)} is empty (a stray comma?)")
    key_id, colon, material = entry.partition(":")
    if not colon:
        _refuse(f"{_where(position)} has no ':' between the key id and the key")
    key_id, material = key_id.strip(), material.strip()
    _check_key_id(key_id, position)
    if not material:
        _refuse(f"{_where(position, key_id)}: the key is missing after ':'")
    key = _decode_key(material)
    if key is None:
        _refuse(f"{_where(position, key_id)}: the key is not canonical standard base64")
    if len(key) != KEY_SIZE:
        _refuse(
            f"{_where(position, key_id)}: the key decodes to {len(key)} bytes; "
            f"AES-256 needs exactly {KEY_SIZE}"
        )
    return key_id, key


def _decode_key(material: str) -> bytes | None:
    # Strict: the standard alphabet with padding, and the canonical encoding only (no spare
    # trailing bits), so one key has exactly one spelling.
    try:
        key = base64.b64decode(material, validate=True)
    except ValueError:  # binascii.Error, or non-ASCII input
        return None
    return key if base64.b64encode(key).decode("ascii") == material else None


def _resolve_active(active_key_id: str | None, key_ids: tuple[str, ...]) -> str:
    if active_key_id is None:
        return key_ids[0]
    active = active_key_id.strip()
    if not _KEY_ID.fullmatch(active):
        _refuse(f"{_ACTIVE_VAR} is not a valid key id ({_KEY_ID_RULE})")
    if active not in key_ids:
        _refuse(f"{_ACTIVE_VAR} {active!r} is not in {_KEYS_VAR} (key ids: {', '.join(key_ids)})")
    return active


def rewrapped_columns(
    keyring: Keyring, row: Any, prefix: bytes, fields: tuple[str, ...]
) -> dict[str, Any]:
    """The sealed columns (``<field>_key_id``, ``_nonce``, ``_ciphertext``) of ``row`` that are
    not under the active key, rewrapped under it with the same AAD and a fresh nonce (key
    rotation, for every table with sealed fields). Raises :class:`CredentialUnavailable` for a
    field whose key is not in the ring."""
    values: dict[str, Any] = {}
    for field in fields:
        key_id = getattr(row, f"{field}_key_id")
        if key_id is None or key_id == keyring.active_key_id:
            continue
        sealed = Sealed(
            key_id=key_id,
            nonce=bytes(getattr(row, f"{field}_nonce")),
            ciphertext=bytes(getattr(row, f"{field}_ciphertext")),
        )
        fresh = keyring.rewrap(sealed, row_aad(prefix, row.tenant_id, row.id, field))
        values[f"{field}_key_id"] = fresh.key_id
        values[f"{field}_nonce"] = fresh.nonce
        values[f"{field}_ciphertext"] = fresh.ciphertext
    return values
