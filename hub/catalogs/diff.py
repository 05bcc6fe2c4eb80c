"""Drift between two catalog versions: tools added, removed, and changed field by field.

A changed tool lists each differing top-level Tool key in snake_case (``inputSchema`` →
``input_schema``, ``_meta`` → ``meta``), so schema drift is visible at a glance (DESIGN §13), and
carries what changed (DESIGN §14): ``before`` and ``after`` map each of those fields to the
verbatim value in the older and the newer version. A field one version lacks is absent from that
side's map (so an absent key and a JSON ``null`` stay distinguishable).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CatalogDiff", "diff_tools", "snake_case"]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_case(key: str) -> str:
    return _CAMEL.sub("_", key.lstrip("_")).lower()


@dataclass(frozen=True)
class CatalogDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)


def diff_tools(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> CatalogDiff:
    before = {str(t["name"]): t for t in old}
    after = {str(t["name"]): t for t in new}
    changed = []
    for name in sorted(before.keys() & after.keys()):
        a, b = before[name], after[name]
        keys = sorted((k for k in a.keys() | b.keys() if a.get(k) != b.get(k)), key=snake_case)
        if keys:
            changed.append(
                {
                    "name": name,
                    "fields": [snake_case(k) for k in keys],
                    "before": {snake_case(k): a[k] for k in keys if k in a},
                    "after": {snake_case(k): b[k] for k in keys if k in b},
                }
            )
    return CatalogDiff(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=changed,
    )
