"""Which pinned tools drifted: a catalog's tools against a complete discovery's (DESIGN §10.6).

Pure functions, no I/O. A pinned tool is compared by the hash of its whole Tool object (the
catalog's ``tool_sha256``), so any field counts:

- ``changed`` — the live tool of the same name hashes differently; ``changed`` lists the differing
  fields (snake_case, as a catalog diff) and ``before``/``after`` their values;
- ``renamed`` — the name is gone and a live tool the pinned one does not know is identical but for
  its ``name`` (``renamed_to``);
- ``gone`` — the name is gone and nothing identical took its place.

The record carries what DESIGN §15 names for an approval of a drifted tool: ``from_sha256``
(pinned), ``to_sha256`` (live; ``None`` when gone) and ``changed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hub.catalogs.canonical import tool_sha256
from hub.catalogs.diff import diff_tools

__all__ = ["DriftRecord", "drifted_tools"]

DriftRecord = dict[str, Any]


def _without_name(tool: Mapping[str, Any]) -> str:
    return tool_sha256({k: v for k, v in tool.items() if k != "name"})


def drifted_tools(
    pinned: Sequence[Mapping[str, Any]],
    pinned_hashes: Mapping[str, str],
    live: Sequence[Mapping[str, Any]],
) -> dict[str, DriftRecord]:
    """``{pinned tool name: drift record}`` for every pinned tool that drifted."""
    live_by_name = {str(t["name"]): t for t in live}
    pinned_names = {str(t["name"]) for t in pinned}
    newcomers: dict[str, str] = {}  # hash without the name -> live name (first by name wins)
    for name in sorted(live_by_name.keys() - pinned_names):
        newcomers.setdefault(_without_name(live_by_name[name]), name)
    out: dict[str, DriftRecord] = {}
    for tool in pinned:
        name = str(tool["name"])
        pinned_sha = pinned_hashes.get(name) or tool_sha256(tool)
        current = live_by_name.get(name)
        if current is not None:
            live_sha = tool_sha256(current)
            if live_sha == pinned_sha:
                continue
            [change] = diff_tools([tool], [current]).changed
            out[name] = {
                "kind": "changed",
                "from_sha256": pinned_sha,
                "to_sha256": live_sha,
                "changed": change["fields"],
                "before": change["before"],
                "after": change["after"],
            }
            continue
        renamed = newcomers.get(_without_name(tool))
        if renamed is not None:
            out[name] = {
                "kind": "renamed",
                "from_sha256": pinned_sha,
                "to_sha256": tool_sha256(live_by_name[renamed]),
                "changed": ["name"],
                "before": {"name": name},
                "after": {"name": renamed},
                "renamed_to": renamed,
            }
            continue
        out[name] = {
            "kind": "gone",
            "from_sha256": pinned_sha,
            "to_sha256": None,
            "changed": [],
            "before": {},
            "after": {},
        }
    return out
