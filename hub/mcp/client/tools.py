"""Ingesting ``tools/list``: pagination, dropped tools, duplicate names (MCP-PROTOCOL §4a, §3d).

- **Pagination**: follow ``nextCursor`` until it is absent or null; an empty string is a cursor
  (2026-07-28). A cursor handed out a second time within one listing is a loop, not progress:
  ``protocol_error`` at once (rather than re-fetching the same pages until the deadline or the
  byte budget stops it). Every page is fetched inside the caller's one operation, so its
  deadline and byte budget bound a server that paginates forever with fresh cursors.
- **Raw JSON**: a kept tool is the exact JSON object received. ``mcp-types`` validates it, but its
  models drop unknown fields, so a re-serialised model is never stored (DESIGN §13, "Catalog hash").
- **Dropped, not fatal** (DESIGN §13): an entry is left out and reported in ``dropped`` as
  ``{"name": str | None, "reason": …}`` when it is not an object (``invalid_tool``), has no
  non-empty string ``name`` (``missing_name``), has an ``inputSchema`` that is missing, not an
  object or whose root ``type`` is not ``"object"`` (``invalid_input_schema``), has invalid
  ``x-mcp-header`` markings (``invalid_x_mcp_header``; a client on HTTP MUST drop such a tool),
  has an ``inputSchema`` or ``outputSchema`` too costly to validate against — over
  :data:`MAX_SCHEMA_BYTES` of canonical JSON, over :data:`MAX_SUBSCHEMAS` objects, or nested over
  :data:`MAX_SCHEMA_DEPTH` levels (``schema_too_complex``, DESIGN §10.2) — or otherwise fails the
  ``mcp-types`` ``Tool`` model (``invalid_tool``), or holds U+0000 in any string or key
  (``nul_character``: PostgreSQL can store it neither in ``text`` nor in ``jsonb``, and a catalog
  must read the same on both backends; an entry whose name holds it is reported with no name).
- **Listed up to a point**: the first :data:`MAX_DROPPED_LISTED` dropped entries are listed; all
  are counted (``dropped_total``), and one warning per listing gives the count by reason. (Each
  was listed and logged, so a 4 MiB page of ``1,`` — two million entries — made two million
  log lines and an 84 MB answer: stop 43.)
- **Fatal**: two entries with the same name (dropped ones included) fail the whole discovery
  with ``duplicate_tool``, since the hub could not tell which one a grant or a call means.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types
from pydantic import ValidationError

from hub.core.canonical import canonical_json
from hub.core.portable_json import depth_exceeds, holds_nul
from hub.mcp.errors import McpError
from hub.mcp.headers import has_invalid_x_mcp_header

__all__ = ["DropReason", "ToolCatalog", "collect_tools", "drop_reason"]

logger = logging.getLogger(__name__)

DropReason = Literal[
    "invalid_tool",
    "missing_name",
    "invalid_input_schema",
    "invalid_x_mcp_header",
    "schema_too_complex",
    "nul_character",
]

#: Bounds on a tool's schemas (DESIGN §10.2): every call validates its arguments against the
#: ``inputSchema``, so a schema must stay cheap to compile and to walk.
MAX_SCHEMA_BYTES = 64 * 1024
MAX_SUBSCHEMAS = 1_000
MAX_SCHEMA_DEPTH = 64
#: Dropped entries listed by name and reason; the rest are only counted.
MAX_DROPPED_LISTED = 100

PageFetcher = Callable[[str | None], Awaitable[Mapping[str, Any]]]
"""Fetch one ``tools/list`` page (``None``: the first) and return its checked result object."""


def _validates(tool: Mapping[str, Any]) -> bool:
    try:
        mcp_types.Tool.model_validate(tool)
    except ValidationError:
        return False
    return True


def _count_objects(value: Any, limit: int) -> int:
    """How many JSON objects ``value`` holds, counting no further than ``limit + 1``."""
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        if isinstance(item, dict):
            count += 1
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def schema_too_complex(schema: Any) -> bool:
    """Whether a tool schema passes the size, object-count or depth bound."""
    if schema is None:
        return False
    if depth_exceeds(schema, MAX_SCHEMA_DEPTH):
        return True
    if _count_objects(schema, MAX_SUBSCHEMAS) > MAX_SUBSCHEMAS:
        return True
    return len(canonical_json(schema)) > MAX_SCHEMA_BYTES


def drop_reason(tool: Any) -> DropReason | None:
    """Why a ``tools/list`` entry must be dropped, or ``None`` to keep it."""
    if not isinstance(tool, dict):
        return "invalid_tool"
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return "missing_name"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "invalid_input_schema"
    if schema_too_complex(schema) or schema_too_complex(tool.get("outputSchema")):
        return "schema_too_complex"
    if has_invalid_x_mcp_header(schema):
        return "invalid_x_mcp_header"
    if not _validates(tool):
        return "invalid_tool"
    if holds_nul(tool):
        return "nul_character"
    return None


@dataclass
class ToolCatalog:
    """The tools kept so far (raw, in server order) and the entries dropped: the first
    :data:`MAX_DROPPED_LISTED` with their reasons, all of them counted."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    dropped_reasons: Counter[str] = field(default_factory=Counter)
    _names: set[str] = field(default_factory=set)

    @property
    def dropped_total(self) -> int:
        return self.dropped_reasons.total()

    def add(self, entries: list[Any]) -> None:
        """Ingest one page; ``duplicate_tool`` when a name was seen before."""
        for entry in entries:
            name = entry.get("name") if isinstance(entry, dict) else None
            name = name if isinstance(name, str) and "\x00" not in name else None
            if name:
                if name in self._names:
                    raise McpError("duplicate_tool")
                self._names.add(name)
            reason = drop_reason(entry)
            if reason is None:
                self.tools.append(entry)
            else:
                self.dropped_reasons[reason] += 1
                if len(self.dropped) < MAX_DROPPED_LISTED:
                    self.dropped.append({"name": name, "reason": reason})


async def collect_tools(fetch_page: PageFetcher) -> ToolCatalog:
    """Every page of ``tools/list``: ``tools`` must be a list, ``nextCursor`` a string or absent."""
    catalog = ToolCatalog()
    cursor: str | None = None
    cursors_seen: set[str] = set()
    while True:
        result = await fetch_page(cursor)
        tools = result.get("tools")
        next_cursor = result.get("nextCursor")
        if not isinstance(tools, list) or not (next_cursor is None or isinstance(next_cursor, str)):
            raise McpError("invalid_result")
        catalog.add(tools)
        if next_cursor is None:
            if catalog.dropped_reasons:
                logger.warning(
                    "mcp: dropped tools from the server's list",
                    extra={
                        "dropped": catalog.dropped_total,
                        "reasons": dict(catalog.dropped_reasons),
                    },
                )
            return catalog
        if next_cursor in cursors_seen:
            raise McpError("protocol_error")
        cursors_seen.add(next_cursor)
        cursor = next_cursor
