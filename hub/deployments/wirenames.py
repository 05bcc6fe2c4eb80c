"""Wire names: the tool names shown to models (DESIGN §10, §13 "Wire names").

A wire name matches ``^[A-Za-z0-9_-]{1,64}$`` and is unique within a deployment. It is
``handle__tool`` with every other character replaced by ``_``. When sanitising changed it, when it
is longer than 64 characters, or when it collides with a name already taken, it becomes a prefix
of that plus ``_`` and 8 hex characters of sha256(grant key) — decided per tool.

Stability: servers are named in a fixed order (the order of registration, then handle), and a
plain name is given to the first server that claims it, so adding a server never renames the tools
of servers that were there before; the same inputs always give the same names.

A deployment entry may ask for its tools' own names (``"tool_names": "plain"``): each must then be
a valid wire name, unique in the deployment (:func:`plain_name_problem`, 400 at deployment
create/PATCH). Plain names are claimed before any prefixed one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["WIRE_NAME", "assign_wire_names", "grant_key", "plain_name_problem"]

WIRE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_LENGTH = 64


def grant_key(handle: str, tool: str) -> str:
    return f"tool:{handle}.{tool}"


def _hashed(base: str, key: str, width: int) -> str:
    suffix = hashlib.sha256(key.encode()).hexdigest()[:width]
    return f"{base[: MAX_LENGTH - width - 1]}_{suffix}"


def plain_name_problem(servers: Iterable[tuple[str, Iterable[str], bool]]) -> str | None:
    """Why the plain-named entries cannot keep their tools' own names, or None."""
    seen: set[str] = set()
    for _handle, tools, plain in servers:
        if not plain:
            continue
        for tool in tools:
            if not WIRE_NAME.fullmatch(tool):
                return "a tool of a 'plain' entry is not a valid wire name ([A-Za-z0-9_-], 1-64)"
            if tool in seen:
                return "two tools of 'plain' entries share a name"
            seen.add(tool)
    return None


def _normalised(
    server: tuple[str, Iterable[str]] | tuple[str, Iterable[str], bool],
) -> tuple[str, list[str], bool]:
    plain = len(server) > 2 and bool(server[2])
    return server[0], sorted(server[1]), plain


def assign_wire_names(
    servers: Iterable[tuple[str, Iterable[str]] | tuple[str, Iterable[str], bool]],
) -> dict[tuple[str, str], str]:
    """``{(handle, tool): wire name}`` for servers given in their stable order; a third item
    ``True`` asks for the tools' own names (see the module docstring)."""
    taken: set[str] = set()
    names: dict[tuple[str, str], str] = {}
    ordered = [_normalised(server) for server in servers]
    for handle, tools, own_names in ordered:
        if not own_names:
            continue
        for tool in tools:
            if WIRE_NAME.fullmatch(tool) and tool not in taken:
                taken.add(tool)
                names[(handle, tool)] = tool
    for handle, tools, _plain in ordered:
        for tool in tools:
            if (handle, tool) in names:
                continue
            raw = f"{handle}__{tool}"
            sanitised = _UNSAFE.sub("_", raw)
            key = grant_key(handle, tool)
            if sanitised == raw and len(sanitised) <= MAX_LENGTH and sanitised not in taken:
                name = sanitised
            else:
                name = _hashed(sanitised, key, 8)
                if name in taken:  # a 32-bit suffix collision: widen deterministically
                    name = _hashed(sanitised, key, 16)
            taken.add(name)
            names[(handle, tool)] = name
    return names
