"""Arguments and schemas that cost jsonschema work out of proportion to their size (stop 43)."""

from __future__ import annotations

from typing import Any

__all__ = ["RECURSIVE_ONE_OF", "nested"]

#: What a recursive model with a union in it looks like: each level of the arguments validates
#: both branches, so the work doubles with each level. The failing keyword's name is longer than
#: ``properties``, so PostgreSQL's ``jsonb`` (which orders keys by length) still evaluates it
#: second, after the descent.
RECURSIVE_ONE_OF: dict[str, Any] = {
    "type": "object",
    "oneOf": [
        {"properties": {"a": {"$ref": "#"}}},
        {"properties": {"a": {"$ref": "#"}}, "minProperties": 2},
    ],
}


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": … {}}}``, ``depth`` levels."""
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value
