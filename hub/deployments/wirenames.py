"""Wire names: the tool names shown to models (DESIGN §10, §13 "Wire names").

A wire name matches ``^[A-Za-z0-9_-]{1,64}$`` and is unique within a deployment. It is
``handle__tool`` with every other character replaced by ``_``. When sanitising changed it, when it
is longer than 64 characters, or when it collides with a name already taken, it becomes a prefix
of that plus ``_`` and 8 hex characters of sha256(grant key) — decided per tool.

Stability: servers are named in a fixed order (the order of registration, then handle), and a
plain name is given to the first server that claims it, so adding a server never renames the tools
of servers that were there before; the same inputs always give the same names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["WIRE_NAME", "assign_wire_names", "grant_key"]

WIRE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_LENGTH = 64


def grant_key(handle: str, tool: str) -> str:
    return f"tool:{handle}.{tool}"


def _hashed(base: str, key: str, width: int) -> str:
    suffix = hashlib.sha256(key.encode()).hexdigest()[:width]
    return f"{base[: MAX_LENGTH - width - 1]}_{suffix}"


def assign_wire_names(servers: Iterable[tuple[str, Iterable[str]]]) -> dict[tuple[str, str], str]:
    """``{(handle, tool): wire name}`` for servers given in their stable order."""
    taken: set[str] = set()
    names: dict[tuple[str, str], str] = {}
    for handle, tools in servers:
        for tool in sorted(tools):
            raw = f"{handle}__{tool}"
            plain = _UNSAFE.sub("_", raw)
            key = grant_key(handle, tool)
            if plain == raw and len(plain) <= MAX_LENGTH and plain not in taken:
                name = plain
            else:
                name = _hashed(plain, key, 8)
                if name in taken:  # a 32-bit suffix collision: widen deterministically
                    name = _hashed(plain, key, 16)
            taken.add(name)
            names[(handle, tool)] = name
    return names
