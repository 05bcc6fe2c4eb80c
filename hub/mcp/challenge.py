"""The ``Bearer`` challenge of a 401/403 answer: RFC 6750 §3, RFC 9728 §5.1, RFC 7235 §4.1.

An MCP server that wants a token answers ``401`` with
``WWW-Authenticate: Bearer resource_metadata="…", scope="…"`` (MCP authorization, "Protected
Resource Metadata Discovery"), and a token without enough scope with ``403`` and
``error="insufficient_scope"`` (RFC 6750 §3.1, MCP "Step-Up Authorization Flow"). The hub keeps
only the three parameters it acts on: ``error``, ``scope`` (RFC 6749 §3.3 scope tokens) and
``resource_metadata`` (RFC 9728 §5.1). ``error_description`` and ``error_uri`` are upstream text
and are dropped on purpose: nothing upstream wrote may reach a client of the hub.

Grammar (RFC 7235 §2.1, §4.1): ``1#challenge``, each ``auth-scheme [ 1*SP ( token68 /
#auth-param ) ]``, ``auth-param = token BWS "=" BWS ( token / quoted-string )``. Several
challenges may share one header (``Bearer …, DPoP …``); the first ``Bearer`` one counts. The
parser is bounded (header length, parameters) and never raises: what cannot be read is no
challenge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["SCOPE_TOKEN", "BearerChallenge", "parse_bearer_challenge", "split_scopes"]

#: RFC 6749 §3.3: ``scope-token = 1*( %x21 / %x23-5B / %x5D-7E )``.
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,256}")
MAX_HEADER = 8192
MAX_SCOPES = 64
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(frozen=True)
class BearerChallenge:
    """What a ``Bearer`` challenge asks for (each part may be absent)."""

    error: str | None = None
    scopes: tuple[str, ...] = ()
    resource_metadata: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


def split_scopes(value: str | None) -> tuple[str, ...] | None:
    """A space-separated scope string as tokens (order kept, duplicates dropped); ``None`` when
    any token breaks RFC 6749 §3.3 or there are too many."""
    if value is None:
        return ()
    tokens = [t for t in value.split(" ") if t]
    if len(tokens) > MAX_SCOPES or not all(SCOPE_TOKEN.fullmatch(t) for t in tokens):
        return None
    return tuple(dict.fromkeys(tokens))


def _lex(header: str) -> list[tuple[str, str]] | None:
    """``(kind, text)`` items: ``t`` token (or token68), ``q`` quoted string, ``=``, ``,``."""
    items: list[tuple[str, str]] = []
    i, n = 0, len(header)
    while i < n:
        ch = header[i]
        if ch in " \t":
            i += 1
        elif ch in ",=":
            items.append((ch, ch))
            i += 1
        elif ch == '"':
            i += 1
            out: list[str] = []
            while i < n and header[i] != '"':
                if header[i] == "\\" and i + 1 < n:
                    i += 1
                out.append(header[i])
                i += 1
            if i >= n:
                return None  # an unterminated quoted string
            items.append(("q", "".join(out)))
            i += 1
        else:
            match = _TOKEN.match(header, i)
            if match is None:
                return None
            items.append(("t", match.group()))
            i = match.end()
    return items


def _bearer_params(items: list[tuple[str, str]]) -> dict[str, str] | None:
    """The auth-params of the first ``Bearer`` challenge (names lowercased)."""
    params: dict[str, str] | None = None
    i = 0
    while i < len(items):
        kind, text = items[i]
        is_param = kind == "t" and i + 1 < len(items) and items[i + 1][0] == "="
        if kind == "t" and not is_param:  # a new challenge starts with its scheme
            if params is not None:
                return params
            if text.lower() == "bearer":
                params = {}
            i += 1
        elif is_param:
            if i + 2 < len(items) and items[i + 2][0] in ("t", "q"):
                if params is not None:
                    params.setdefault(text.lower(), items[i + 2][1])
                i += 3
            else:
                i += 2
        else:
            i += 1
    return params


def parse_bearer_challenge(headers: Mapping[str, str]) -> BearerChallenge | None:
    """The ``Bearer`` challenge of ``WWW-Authenticate``, or ``None`` when there is none."""
    header = headers.get("www-authenticate")
    if not header or len(header) > MAX_HEADER:
        return None
    items = _lex(header)
    params = _bearer_params(items) if items is not None else None
    if params is None:
        return None
    scopes = split_scopes(params.get("scope")) or ()
    error = params.get("error")
    if error is not None and not re.fullmatch(r"[a-z_]{1,64}", error):
        error = None
    metadata = params.get("resource_metadata")
    if metadata is not None and (len(metadata) > 2048 or not metadata.isprintable()):
        metadata = None
    return BearerChallenge(error=error, scopes=scopes, resource_metadata=metadata)
