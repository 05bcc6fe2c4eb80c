"""API key format, checksum and hashing (DESIGN §9, §13; SECURITY §3).

A key is ``hub_`` + 12 base62 (the public key id, used for lookup) + ``_`` + 32 base62 (the secret,
~190 bits) + 6 base62 (CRC32 of everything before it). The checksum lets the hub refuse typos and
random strings without touching the database. Only HMAC-SHA256(pepper, key) is stored: the key has
enough entropy that a slow hash buys nothing and would cost latency on every request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import zlib
from dataclasses import dataclass

__all__ = [
    "ParsedKey",
    "PepperProof",
    "display_prefix",
    "generate_key",
    "hash_key",
    "parse_key",
    "pepper_check",
]

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_KEY_RE = re.compile(r"^hub_([0-9A-Za-z]{12})_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$")
KEY_LENGTH = len("hub_") + 12 + 1 + 32 + 6


@dataclass(frozen=True)
class ParsedKey:
    key_id: str
    full: str

    def __repr__(self) -> str:  # never show the secret part
        return f"ParsedKey(key_id={self.key_id!r})"


def _base62(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        value, rem = divmod(value, 62)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def _random_base62(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), 6)


def generate_key() -> tuple[str, str]:
    """A new key and its key id."""
    key_id = _random_base62(12)
    body = f"hub_{key_id}_{_random_base62(32)}"
    return body + _checksum(body), key_id


def parse_key(raw: str | None) -> ParsedKey | None:
    """The parsed key, or None when it is malformed or its checksum is wrong (no I/O)."""
    if raw is None or len(raw) != KEY_LENGTH:
        return None
    match = _KEY_RE.match(raw)
    if match is None:
        return None
    body = raw[:-6]
    if not hmac.compare_digest(_checksum(body), match.group(3)):
        return None
    return ParsedKey(key_id=match.group(1), full=raw)


def hash_key(pepper: bytes, key: str) -> str:
    return hmac.new(pepper, key.encode(), hashlib.sha256).hexdigest()


class PepperProof:
    """Whether an API key has authenticated on this replica: its pepper is then the one this
    database's keys were made with (a replica under another pepper authenticates none), which
    ``/readyz`` records (:mod:`hub.health.secret_checks`). One per app."""

    __slots__ = ("proven",)

    def __init__(self) -> None:
        self.proven = False


def pepper_check(pepper: bytes) -> bytes:
    """What tells this pepper from any other without revealing it: the HMAC of a fixed string
    that is no key's shape (``/readyz`` compares it with the one stored)."""
    return hmac.new(pepper, b"hub/pepper-check/v1", hashlib.sha256).digest()


def display_prefix(key_id: str) -> str:
    return f"hub_{key_id}"
