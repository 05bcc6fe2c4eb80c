"""The catalog hash and per-tool hashes (DESIGN §13 "Catalog hash").

Hashes are sha256 of :func:`hub.core.canonical.canonical_json` over the values exactly as
received. The catalog hash covers the protocol
version, server info, capabilities, instructions and the tools (sorted by name, raw JSON, so unknown
fields count), excluding the cache hints ``ttlMs`` and ``cacheScope`` and any result-level
``_meta``, which vary between identical answers. Each tool also gets its own hash, which approvals
and ``allow_without_ask`` entries are bound to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hub.core.canonical import sha256_of

__all__ = ["catalog_sha256", "sorted_tools", "tool_sha256"]

_VOLATILE = frozenset({"ttlMs", "cacheScope", "_meta"})


def tool_sha256(tool: Mapping[str, Any]) -> str:
    return sha256_of(tool)


def sorted_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return sorted((dict(t) for t in tools), key=lambda t: str(t.get("name")))


def _without_volatile(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in _VOLATILE}


def catalog_sha256(
    *,
    protocol_version: str,
    server_info: Mapping[str, Any],
    capabilities: Mapping[str, Any],
    instructions: str | None,
    tools: Sequence[Mapping[str, Any]],
) -> str:
    return sha256_of(
        {
            "protocol_version": protocol_version,
            "server_info": _without_volatile(server_info),
            "capabilities": _without_volatile(capabilities),
            "instructions": instructions,
            "tools": sorted_tools(tools),
        }
    )
