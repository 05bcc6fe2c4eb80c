"""JSON the hub can pass on: parsed strictly, so a value read from the wire can be written again.

``json.loads`` accepts more than it can write back as JSON, or write at all:

- ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; ``json.dumps`` writes them back as they came,
  so whoever reads them next fails);
- numbers past a double's range (``1e400`` reads as ``inf``, written back as ``Infinity``);
- ``\\ud800``-style escapes of a lone surrogate (a ``str`` that no UTF-8 encoder accepts: the
  answer that carries it raises ``UnicodeEncodeError`` on its way out);
- nesting as deep as the interpreter's recursion allows (then every walk of it may raise
  ``RecursionError``).

:func:`loads` refuses all of these with :class:`NotPortableJson`, whose ``reason`` names the
kind and never quotes the input. Lone surrogates may instead be replaced by U+FFFD
(``surrogates="replace"``): a JavaScript server that cuts a string between the two halves of a
pair sends exactly that, and one broken emoji should not cost the whole answer.

What the checks cost: a hook call per float literal, and one walk of the parsed value that
looks at each value once and at the characters of non-ASCII strings only (whether they encode
as UTF-8); no scan of the raw text. Only a document with a lone surrogate is copied.

Written by hand: the standard library's decoder has the hooks but not the rules, and the
stricter decoders (orjson) refuse lone surrogates outright, with no way to replace them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any, Literal

__all__ = [
    "REASONS",
    "NotPortableJson",
    "check",
    "depth_exceeds",
    "holds_nul",
    "loads",
    "nul_replaced",
    "why",
]

#: what each refusal means, for an error message (no input quoted)
REASONS = {
    "not_json": "the body is not JSON",
    "non_finite_number": "NaN, Infinity and numbers beyond a double's range are not JSON",
    "lone_surrogate": "a string holds a lone surrogate escape (\\ud800 to \\udfff)",
    "too_deep": "objects and arrays are nested too deeply",
}

_SURROGATE = re.compile("[\ud800-\udfff]")


class NotPortableJson(ValueError):
    """A document :func:`loads` refused; ``reason`` is a key of :data:`REASONS`."""

    def __init__(self, reason: str) -> None:
        super().__init__(REASONS[reason])
        self.reason = reason


def why(refused: NotPortableJson) -> str:
    """``": <the reason>"`` to follow a message saying what was expected, or nothing when the
    text was not JSON at all (a command-line flag's error)."""
    return "" if refused.reason == "not_json" else f": {refused}"


def _refuse_constant(name: str) -> Any:
    raise NotPortableJson("non_finite_number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotPortableJson("non_finite_number")
    return value


def _encodable(text: str) -> bool:
    if text.isascii():  # O(1): CPython keeps the flag
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _past_a_double(value: int) -> bool:
    # a JavaScript reader takes such an integer as Infinity, Python's as its exact digits: the
    # two sides of the hub (an approver, the server) would read two values
    if value.bit_length() <= 1023:
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _finite_int(text: str) -> int:
    value = int(text)
    if _past_a_double(value):
        raise NotPortableJson("non_finite_number")
    return value


_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_finite_int
)


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _without_surrogates(value: Any, replace: bool) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD, or refused. Recursive: called only
    on a document already known to nest no deeper than its limit."""
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value
        if not replace:
            raise NotPortableJson("lone_surrogate")
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {
            _without_surrogates(key, replace): _without_surrogates(item, replace)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_without_surrogates(item, replace) for item in value]
    return value


def _surrogate_found(value: Any, max_depth: int, *, floats: bool = False) -> bool:
    """Whether a string or key of ``value`` holds a lone surrogate; :class:`NotPortableJson`
    when containers nest past ``max_depth``, or, with ``floats``, for a float that is not finite
    or an integer past a double's range (a parse with :data:`_DECODER` never yields either).
    One walk, level by level: it visits each
    value once, and never a character of an ASCII string."""
    found = False
    level = [value]
    depth = 0
    while level:
        depth += 1
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str:
                found = found or not _encodable(item)
            elif kind is dict:
                if depth > max_depth:
                    raise NotPortableJson("too_deep")
                found = found or not all(_encodable(key) for key in item)
                below.extend(item.values())
            elif kind is list:
                if depth > max_depth:
                    raise NotPortableJson("too_deep")
                below.extend(item)
            elif floats and (
                (kind is float and not math.isfinite(item))
                or (kind is int and _past_a_double(item))
            ):
                raise NotPortableJson("non_finite_number")
        level = below
    return found


def check(value: Any, *, max_depth: int) -> None:
    """:class:`NotPortableJson` unless ``value``, parsed by a more lenient parser than
    :func:`loads` (the ``mcp`` SDK's, FastAPI's), is one :func:`loads` would have returned
    unchanged: no float that is not finite, no integer past a double's range, no lone
    surrogate, no nesting past ``max_depth``."""
    if _surrogate_found(value, max_depth, floats=True):
        raise NotPortableJson("lone_surrogate")


def loads(
    raw: bytes | str, *, max_depth: int, surrogates: Literal["refuse", "replace"] = "refuse"
) -> Any:
    """The JSON value of ``raw``, or :class:`NotPortableJson`. (Python's decoder joins an escaped
    surrogate *pair* into its one character: only lone halves are left to find. Bytes are
    decoded strictly, unlike ``json.loads``, whose ``surrogatepass`` lets an encoded lone
    surrogate through with no escape to find.)"""
    try:
        text = raw.decode(json.detect_encoding(raw)) if isinstance(raw, bytes) else raw
        value = _DECODER.decode(text)
    except NotPortableJson:
        raise
    except RecursionError:
        raise NotPortableJson("too_deep") from None
    except ValueError:  # UnicodeDecodeError included
        raise NotPortableJson("not_json") from None  # the decoder's error quotes the input
    if _surrogate_found(value, max_depth):
        return _without_surrogates(value, surrogates == "replace")
    return value


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def holds_nul(value: Any) -> bool:
    """Whether any string of ``value`` (keys included) holds U+0000, which JSON carries and
    PostgreSQL cannot store in ``text`` or ``jsonb`` (iterative: any depth)."""
    return any("\x00" in text for text in _strings(value))


def nul_replaced(value: Any) -> Any:
    """``value`` with U+0000 replaced by U+FFFD in every string and key (recursive: for a
    document already bounded in depth by :func:`loads`)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {nul_replaced(key): nul_replaced(item) for key, item in value.items()}
    if isinstance(value, list):
        return [nul_replaced(item) for item in value]
    return value
