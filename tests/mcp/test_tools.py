"""Unit tests: ``tools/list`` ingestion (dropped tools, duplicates, raw JSON, pagination)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from hub.mcp import McpError
from hub.mcp.client.tools import ToolCatalog, collect_tools, drop_reason


def tool(name: Any = "t", **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"inputSchema": {"type": "object"}, **fields}
    if name is not None:
        entry["name"] = name
    return entry


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("not an object", "invalid_tool"),
        (tool(None), "missing_name"),
        (tool(""), "missing_name"),
        (tool(7), "missing_name"),
        ({"name": "t"}, "invalid_input_schema"),
        (tool(inputSchema=None), "invalid_input_schema"),
        (tool(inputSchema="object"), "invalid_input_schema"),
        (tool(inputSchema={"type": "array"}), "invalid_input_schema"),
        (tool(inputSchema={"properties": {}}), "invalid_input_schema"),
        (
            tool(
                inputSchema={
                    "type": "object",
                    "properties": {"s": {"type": "number", "x-mcp-header": "S"}},
                }
            ),
            "invalid_x_mcp_header",
        ),
        (tool(annotations="destructive"), "invalid_tool"),
        (tool(description=["not", "text"]), "invalid_tool"),
        (tool(icons=[{"no": "src"}]), "invalid_tool"),
    ],
)
def test_malformed_tools_are_dropped_with_a_reason(entry: Any, reason: str) -> None:
    assert drop_reason(entry) == reason
    catalog = ToolCatalog()
    catalog.add([entry, tool("kept")])
    assert [t["name"] for t in catalog.tools] == ["kept"]
    name = entry.get("name") if isinstance(entry, dict) else None
    assert catalog.dropped == [{"name": name if isinstance(name, str) else None, "reason": reason}]


def test_kept_tools_are_the_raw_objects_received_unknown_fields_included() -> None:
    raw = tool(
        "search",
        title="Search",
        inputSchema={"type": "object", "$defs": {"q": {"type": "string"}}, "x-vendor": 1},
        outputSchema={"type": "array"},
        annotations={"readOnlyHint": True, "x-unknown-hint": "kept"},
        execution={"taskSupport": "optional"},
        _meta={"example.com/k": "v"},
        futureField={"nested": [1, 2]},
    )
    before = copy.deepcopy(raw)
    catalog = ToolCatalog()
    catalog.add([raw])
    assert catalog.tools[0] is raw
    assert catalog.tools[0] == before


def test_duplicate_names_fail_the_whole_listing() -> None:
    catalog = ToolCatalog()
    catalog.add([tool("a"), tool("b")])
    with pytest.raises(McpError) as caught:
        catalog.add([tool("c"), tool("a")])
    assert caught.value.reason == "duplicate_tool"


def test_a_dropped_tool_still_counts_for_duplicates() -> None:
    with pytest.raises(McpError) as caught:
        ToolCatalog().add([tool("a", inputSchema={"type": "string"}), tool("a")])
    assert caught.value.reason == "duplicate_tool"


def pages(*results: dict[str, Any]) -> tuple[list[str | None], Any]:
    seen: list[str | None] = []
    queue = list(results)

    async def fetch(cursor: str | None) -> Mapping[str, Any]:
        seen.append(cursor)
        return queue.pop(0)

    return seen, fetch


async def test_pagination_follows_next_cursor_and_an_empty_string_is_a_cursor() -> None:
    seen, fetch = pages(
        {"tools": [tool("a")], "nextCursor": ""},
        {"tools": [tool("b")], "nextCursor": "p3"},
        {"tools": [tool("c")], "nextCursor": None},
    )
    catalog = await collect_tools(fetch)
    assert [t["name"] for t in catalog.tools] == ["a", "b", "c"]
    assert seen == [None, "", "p3"]


@pytest.mark.parametrize(
    "page",
    [{"tools": {"a": 1}}, {"nextCursor": None}, {"tools": [], "nextCursor": 2}],
)
async def test_a_page_of_the_wrong_shape_is_invalid_result(page: dict[str, Any]) -> None:
    _, fetch = pages(page)
    with pytest.raises(McpError) as caught:
        await collect_tools(fetch)
    assert caught.value.reason == "invalid_result"


@pytest.mark.parametrize("loop", [["same", "same"], ["", ""], ["p2", "p3", "p2"]])
async def test_a_cursor_handed_out_again_is_a_protocol_error(loop: list[str]) -> None:
    seen, fetch = pages(*({"tools": [], "nextCursor": cursor} for cursor in loop))
    with pytest.raises(McpError) as caught:
        await collect_tools(fetch)
    assert caught.value.reason == "protocol_error"
    assert seen == [None, *loop[:-1]]
