"""The 2026-07-28 request headers derived from the body: ``Mcp-Name`` and ``Mcp-Param-*``.

MCP-PROTOCOL §3c/§3d (SEP-2243):

- **Value encoding.** A value goes as-is when it is header-safe; otherwise as the base64 sentinel
  ``=?base64?<base64 of the UTF-8 bytes>?=``. A value is *not* header-safe when it holds any
  character outside printable ASCII (non-ASCII, controls, CR/LF and **any tab**, as the
  conformance suite expects), has leading or trailing spaces, or itself looks like the sentinel.
  Internal spaces stay plain. This applies to ``Mcp-Name`` and every ``Mcp-Param-*``.
- **``x-mcp-header`` markings** in a tool's ``inputSchema``: a property schema may carry
  ``"x-mcp-header": "<Name>"``; the client then sends ``Mcp-Param-<Name>`` with the argument at
  that exact ``properties`` path on ``tools/call``: strings (encoded as above), integers in
  decimal, booleans ``true``/``false``; omitted when the value is null or absent.
- **Validity** (a tool breaking any rule is dropped from the catalog): the name is a non-empty
  RFC 9110 token (so no spaces, colons, controls or non-ASCII); names are unique ignoring case
  within the schema; the property's ``type`` is exactly ``string``, ``integer`` or ``boolean``
  (never ``number``, ``object``, ``array``, ``null`` or a list of types); and the marking is
  reachable from the root through ``properties`` only: a marking on the root, or anywhere under
  ``items``, ``anyOf``/``oneOf``/``allOf``/``not``, ``if``/``then``/``else``, ``$defs`` (what
  ``$ref`` points at) or any other subschema keyword, is invalid.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "SENTINEL_PREFIX",
    "SENTINEL_SUFFIX",
    "decode_header_value",
    "encode_header_value",
    "has_invalid_x_mcp_header",
    "header_params",
    "needs_encoding",
    "param_headers",
]

SENTINEL_PREFIX: Final[str] = "=?base64?"
SENTINEL_SUFFIX: Final[str] = "?="
MARKING: Final[str] = "x-mcp-header"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_MIRRORED_TYPES: Final[frozenset[str]] = frozenset({"string", "integer", "boolean"})

# JSON Schema keywords whose values are subschemas other than ``properties`` (2020-12 and the
# draft-07 spellings): a marking found under any of them is not reachable through properties.
_SCHEMA_KEYWORDS: Final[frozenset[str]] = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)
_SCHEMA_LIST_KEYWORDS: Final[frozenset[str]] = frozenset(
    {"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)
_SCHEMA_MAP_KEYWORDS: Final[frozenset[str]] = frozenset(
    {"$defs", "definitions", "patternProperties", "dependentSchemas", "dependencies"}
)


# ------------------------------------------------------------------------------- value encoding
def needs_encoding(value: str) -> bool:
    """Whether ``value`` must travel as the base64 sentinel (see the module docstring)."""
    if any(not " " <= ch <= "~" for ch in value):
        return True
    if value != value.strip(" "):
        return True
    return value[: len(SENTINEL_PREFIX)].lower() == SENTINEL_PREFIX and value.endswith(
        SENTINEL_SUFFIX
    )


def encode_header_value(value: str) -> str:
    """``value`` itself when header-safe, else ``=?base64?…?=`` of its UTF-8 bytes."""
    if not needs_encoding(value):
        return value
    encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return f"{SENTINEL_PREFIX}{encoded}{SENTINEL_SUFFIX}"


def decode_header_value(value: str) -> str:
    """Undo :func:`encode_header_value` (a value that is not a sentinel is returned as-is)."""
    if (
        value[: len(SENTINEL_PREFIX)].lower() == SENTINEL_PREFIX
        and value.endswith(SENTINEL_SUFFIX)
        and len(value) >= len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX)
    ):
        inner = value[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
        return base64.b64decode(inner, validate=True).decode("utf-8")
    return value


# ------------------------------------------------------------------------------- markings
class _Invalid(Exception):
    """A marking breaks a rule (internal; the caller only learns *that* it is invalid)."""


def _subschemas(schema: Mapping[str, Any]) -> Iterator[Any]:
    """Every subschema of ``schema`` reached through a keyword other than ``properties``."""
    for keyword, value in schema.items():
        if keyword in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            yield from value
        elif keyword in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            yield from value.values()
        elif keyword in _SCHEMA_KEYWORDS and isinstance(value, dict):
            yield value


def _walk(
    schema: Any,
    path: tuple[str, ...],
    reachable: bool,
    found: list[tuple[tuple[str, ...], str]],
) -> None:
    if not isinstance(schema, dict):
        return  # boolean schemas and junk carry no marking
    if MARKING in schema:
        name = schema[MARKING]
        if not reachable or not path:
            raise _Invalid
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise _Invalid
        kind = schema.get("type")
        if not isinstance(kind, str) or kind not in _MIRRORED_TYPES:
            raise _Invalid
        if any(other.lower() == name.lower() for _, other in found):
            raise _Invalid
        found.append((path, name))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            _walk(sub, (*path, key), reachable, found)
    for sub in _subschemas(schema):
        _walk(sub, path, False, found)


def header_params(input_schema: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """The ``(properties path, header name)`` pairs the schema marks; ``ValueError`` if invalid."""
    found: list[tuple[tuple[str, ...], str]] = []
    try:
        _walk(input_schema, (), True, found)
    except _Invalid:
        pass
    else:
        return found
    raise ValueError("the tool's x-mcp-header markings are invalid")


def has_invalid_x_mcp_header(input_schema: Mapping[str, Any]) -> bool:
    """Whether the schema's ``x-mcp-header`` markings break a rule (the tool must be dropped)."""
    try:
        header_params(input_schema)
    except ValueError:
        return True
    return False


# ------------------------------------------------------------------------------- mirroring
def _header_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return encode_header_value(value)
    return None  # a value of the wrong type: the server validates the arguments itself


def _lookup(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    current: Any = arguments
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def param_headers(tool: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-<Name>`` headers of one ``tools/call`` (none without a tool definition).

    ``ValueError`` when the tool's markings are invalid: such a tool is dropped at discovery, so
    calling it is the caller's bug.
    """
    if tool is None:
        return {}
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping):
        return {}
    headers: dict[str, str] = {}
    for path, name in header_params(schema):
        value = _header_value(_lookup(arguments, path))
        if value is not None:
            headers[f"Mcp-Param-{name}"] = value
    return headers
