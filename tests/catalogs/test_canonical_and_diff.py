"""Catalog hashing and drift diffs (DESIGN §13)."""

from __future__ import annotations

from typing import Any

from hub.catalogs.canonical import catalog_sha256, tool_sha256
from hub.catalogs.diff import diff_tools, snake_case
from hub.core.canonical import canonical_json

TOOL: dict[str, Any] = {
    "name": "search",
    "description": "Find",
    "inputSchema": {"type": "object"},
    "x-extra": 1,
}


def _hash(**overrides: object) -> str:
    values: dict[str, object] = {
        "protocol_version": "2026-07-28",
        "server_info": {"name": "s", "version": "1"},
        "capabilities": {"tools": {}},
        "instructions": None,
        "tools": [TOOL],
    }
    values.update(overrides)
    return catalog_sha256(**values)  # type: ignore[arg-type]


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


def test_hash_ignores_order_cache_hints_and_meta_but_not_unknown_fields() -> None:
    other = {"name": "add", "inputSchema": {"type": "object"}}
    assert _hash(tools=[TOOL, other]) == _hash(tools=[other, TOOL])
    assert _hash(capabilities={"tools": {}, "ttlMs": 5}) == _hash()
    assert _hash(server_info={"name": "s", "version": "1", "_meta": {"x": 1}}) == _hash()
    assert _hash(tools=[{**TOOL, "x-extra": 2}]) != _hash()
    assert _hash(instructions="hello") != _hash()
    assert tool_sha256(TOOL) != tool_sha256({**TOOL, "description": "Find!"})


def test_diff_names_added_removed_and_changed_fields() -> None:
    old: list[dict[str, Any]] = [TOOL, {"name": "gone", "inputSchema": {"type": "object"}}]
    new: list[dict[str, Any]] = [
        {**TOOL, "inputSchema": {"type": "object", "required": ["q"]}, "_meta": {"a": 1}},
        {"name": "fresh", "inputSchema": {"type": "object"}},
    ]
    diff = diff_tools(old, new)
    assert diff.added == ["fresh"]
    assert diff.removed == ["gone"]
    assert diff.changed == [
        {
            "name": "search",
            "fields": ["input_schema", "meta"],
            "before": {"input_schema": {"type": "object"}},
            "after": {"input_schema": {"type": "object", "required": ["q"]}, "meta": {"a": 1}},
        }
    ]
    assert diff_tools(old, old).changed == []


def test_snake_case() -> None:
    assert snake_case("inputSchema") == "input_schema"
    assert snake_case("outputSchema") == "output_schema"
    assert snake_case("_meta") == "meta"
    assert snake_case("annotations") == "annotations"
