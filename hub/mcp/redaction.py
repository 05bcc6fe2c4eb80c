"""No upstream secret reaches an agent inside a tool result (DESIGN §10.2 step 6, §15), nor
anyone inside what a server's discovery told (``hub.upstream.calls.discover``).

Redaction runs on the *parsed* result before anything is cut, over every string — object keys and
``_meta`` included — replacing the secret in each form an upstream might echo it: as sent, after
``Bearer``, percent-encoded (upper- and lower-case hex), and base64/base64url at each of the three
byte alignments a secret can have inside a longer encoded value (only the characters that depend
on the secret alone are matched). A ``data`` or ``blob`` field (images, audio, embedded resources)
that decodes to bytes containing the secret replaces its whole content block with a
``[redacted]`` text block. Secrets shorter than 16 characters are refused when a credential is
created, which keeps these forms specific.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "UPSTREAM_MESSAGE_CHARS", "Redactor", "secret_forms", "upstream_message"]

REDACTED = "[redacted]"
#: How much of an upstream's own error message an agent is shown (DESIGN §10.2 step 6).
UPSTREAM_MESSAGE_CHARS = 1000
_BINARY_FIELDS = ("data", "blob")


def _aligned(encoder: Any, secret: bytes) -> list[str]:
    forms = []
    for offset in range(3):
        encoded = encoder(b"\0" * offset + secret).decode("ascii")
        start = -(-8 * offset // 6)  # the first character made of the secret's bits alone
        end = (8 * (offset + len(secret))) // 6  # past the last such character
        piece = encoded[start:end]
        if len(piece) >= 8:
            forms.append(piece)
    return forms


def secret_forms(secret: str) -> list[str]:
    """Every textual form of ``secret`` to replace, longest first (so no form is half-eaten)."""
    raw = secret.encode()
    quoted = urllib.parse.quote(secret, safe="")
    forms = {
        secret,
        quoted,
        quoted.lower() if "%" in quoted else quoted,
        urllib.parse.quote_plus(secret),
        *_aligned(base64.b64encode, raw),
        *_aligned(base64.urlsafe_b64encode, raw),
    }
    return sorted((f for f in forms if f), key=len, reverse=True)


class Redactor:
    """Replaces the forms of the given secrets in a parsed result; counts what it replaced."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = [s.encode() for s in secrets if s]
        self._forms: list[str] = []
        for secret in secrets:
            if secret:
                self._forms.extend(secret_forms(secret))
        self._forms.sort(key=len, reverse=True)
        self._shortest = len(self._forms[-1]) if self._forms else 0
        self.replaced = 0

    def text(self, value: str) -> str:
        if len(value) < self._shortest:  # most strings of a large result: no form fits in them
            return value
        for form in self._forms:
            if form in value:
                self.replaced += value.count(form)
                value = value.replace(form, REDACTED)
        return value

    def _binary_holds_secret(self, value: Any) -> bool:
        if not isinstance(value, str) or not self._secrets:
            return False
        try:
            decoded = base64.b64decode(value, validate=False)
        except (binascii.Error, ValueError):
            return False
        return any(secret in decoded for secret in self._secrets)

    def _block(self, block: Any) -> Any:
        if isinstance(block, dict):
            candidates: list[Any] = [block.get(f) for f in _BINARY_FIELDS]
            inner = block.get("resource")
            if isinstance(inner, dict):
                candidates += [inner.get(f) for f in _BINARY_FIELDS]
            if any(self._binary_holds_secret(c) for c in candidates):
                self.replaced += 1
                return {"type": "text", "text": REDACTED}
        return self.value(block)

    def value(self, value: Any) -> Any:
        """``value`` with every secret form replaced, keys included (a new structure)."""
        if isinstance(value, str):
            return self.text(value) if self._forms else value
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def result(self, result: dict[str, Any]) -> dict[str, Any]:
        """A ``CallToolResult`` redacted: content blocks first (binary ones decoded), then all
        the rest; key order is kept."""
        if not self._forms:
            return result
        shaped: dict[str, Any] = {}
        for key, item in result.items():
            if key == "content" and isinstance(item, list):
                shaped[key] = [self._block(block) for block in item]
            else:
                shaped[self.value(key)] = self.value(item)
        return shaped


def upstream_message(message: str, secrets: Iterable[str]) -> str:
    """An upstream's error message for its agent: redacted whole, then cut to
    :data:`UPSTREAM_MESSAGE_CHARS` (cut first, a secret across the cut would be half-kept)."""
    return Redactor(secrets).text(message)[:UPSTREAM_MESSAGE_CHARS]
