"""Arguments checked against the tool's ``inputSchema`` before anything leaves the hub (§10.2).

- **The jsonschema library**, in the dialect the schema declares with ``$schema`` (draft 4, 6,
  7, 2019-09, 2020-12; default 2020-12). An unknown dialect, a schema that does not pass its
  meta-schema, or one that fails while validating, fails the tool *closed*: every call is
  ``invalid_arguments`` with a message naming the schema, never a silent pass.
- **Nothing remote is fetched**: ``$ref`` resolves only inside the schema (a ``referencing``
  registry whose retrieval refuses every URI).
- **Bounded**: ``pattern``, ``patternProperties`` and ``additionalProperties`` (which consults
  ``patternProperties``) run on RE2 (``google-re2``), whose matching is linear in the input; a
  pattern RE2 cannot compile (backreferences, look-around) fails the tool closed. jsonschema's
  ``unevaluatedProperties`` evaluates ``patternProperties`` with Python's backtracking ``re``
  internally, so a schema combining the two fails closed as well. Schema size is bounded at
  snapshot time (``schema_too_complex``).
- **Linear in the arguments**: ``uniqueItems`` is one pass, and every keyword evaluation is
  counted against a budget that grows with the arguments' size
  (:mod:`hub.gateway.engine.validation_cost`); past it the call is ``invalid_arguments``.
  Large arguments are checked off the event loop (:meth:`ArgumentValidator.check`).
- **Strict by default**: when the root declares ``properties`` and sets none of
  ``additionalProperties``, ``unevaluatedProperties`` and ``patternProperties``, undeclared
  top-level arguments are refused; a deployment entry with ``"arguments": "schema"`` applies the
  schema alone.

Errors list each failure's JSON path and message (at most :data:`MAX_ERRORS`, messages cut to
:data:`MAX_MESSAGE`) so the model can correct itself. Compiled validators are cached per tool
definition hash, and RE2 programs per pattern, each cache bounded by what it holds (a schema's
JSON bytes, a program's size), not by count: tool definitions come from upstream servers, and one
schema may be megabytes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import re2
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

from hub.core.weighed import Weighed, find, keep, weighed
from hub.gateway.engine.validation_cost import (
    OFF_LOOP_VALUES,
    TooCostly,
    check_off_loop,
    counted,
    more_values_than,
    spending,
    unique_items,
)

__all__ = ["MAX_ERRORS", "ArgumentError", "ArgumentValidator", "ValidatorCache"]

MAX_ERRORS = 20
MAX_MESSAGE = 300
TOO_COSTLY = (
    "the arguments cost too much to check against the tool's schema (nested or repeated too much)"
)

_DIALECTS: Mapping[str, type[Validator]] = {
    "http://json-schema.org/draft-04/schema": Draft4Validator,
    "http://json-schema.org/draft-06/schema": Draft6Validator,
    "http://json-schema.org/draft-07/schema": Draft7Validator,
    "https://json-schema.org/draft/2019-09/schema": Draft201909Validator,
    "https://json-schema.org/draft/2020-12/schema": Draft202012Validator,
}


@dataclass(frozen=True)
class ArgumentError:
    path: str  # a JSON path into the arguments: "$", "$.query", "$.items[2]"
    message: str


class SchemaUnusable(Exception):
    """The tool's schema cannot be used to validate (its calls fail closed)."""


def _refuse_retrieval(uri: str) -> Resource[Any]:
    raise NoSuchResource(uri)  # nothing remote, nothing on disk, ever


_REGISTRY: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a hostile schema's patterns must not write to stderr
#: pattern -> (program, weight): the pattern's bytes and 16 bytes an instruction of its program
_COMPILED: Weighed[str, Any] = weighed(8 * 1024 * 1024)


#: the loop and the checking thread (:func:`check_off_loop`) both look patterns up, and an LRU
#: cache reorders itself on every lookup
_COMPILED_LOCK = threading.Lock()


def _re2(pattern: str) -> Any:
    """The RE2 program for ``pattern`` (cached); :class:`SchemaUnusable` when RE2 refuses it."""
    with _COMPILED_LOCK:
        kept = find(_COMPILED, pattern)
    if kept is not None:
        return kept
    try:
        compiled = re2.compile(pattern, _RE2_OPTIONS)
    except Exception:  # re2.error and friends: not a pattern RE2 runs in linear time
        raise SchemaUnusable("a pattern the hub cannot evaluate in linear time") from None
    weight = len(pattern.encode()) + 16 * int(compiled.programsize)
    with _COMPILED_LOCK:
        keep(_COMPILED, pattern, compiled, weight)
    return compiled


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _re2(pattern).search(instance):
        yield ValidationError(f"does not match the pattern {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = _re2(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [_re2(p) for p in schema.get("patternProperties", {})]
    extras = [k for k in instance if k not in declared and not any(p.search(k) for p in patterns)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        names = ", ".join(repr(k) for k in sorted(extras)[:10])
        yield ValidationError(f"additional properties are not allowed ({names})")


def _bounded(base: type[Validator]) -> type[Validator]:
    """``base`` with RE2 for patterns, ``uniqueItems`` in one pass, and every keyword counted
    against the call's budget (:mod:`hub.gateway.engine.validation_cost`)."""
    keywords = {
        **base.VALIDATORS,
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": unique_items,
    }
    extended: type[Validator] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        base, {name: counted(keyword) for name, keyword in keywords.items()}
    )
    return extended


_BOUNDED: Mapping[str, type[Validator]] = {uri: _bounded(cls) for uri, cls in _DIALECTS.items()}


def _walk(schema: Any) -> Iterator[Mapping[str, Any]]:
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _dialect(schema: Mapping[str, Any]) -> type[Validator]:
    declared = schema.get("$schema")
    if declared is None:
        return _BOUNDED["https://json-schema.org/draft/2020-12/schema"]
    if not isinstance(declared, str) or declared.rstrip("#") not in _BOUNDED:
        raise SchemaUnusable("the schema declares a dialect the hub does not support")
    return _BOUNDED[declared.rstrip("#")]


def _json_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


class ArgumentValidator:
    """A tool's ``inputSchema``, compiled once; :meth:`errors` checks one call's arguments."""

    def __init__(self, schema: Any, *, strict: bool) -> None:
        self.problem: str | None = None
        self._validator: Any = None
        self._declared: frozenset[str] | None = None
        try:
            self._compile(schema, strict)
        except SchemaUnusable as exc:
            self.problem = str(exc)

    def _compile(self, schema: Any, strict: bool) -> None:
        if not isinstance(schema, dict):
            raise SchemaUnusable("the tool's inputSchema is not an object")
        cls = _dialect(schema)
        try:
            cls.check_schema(schema)
        except SchemaError:
            raise SchemaUnusable("the tool's inputSchema is not a valid schema") from None
        nodes = list(_walk(schema))
        if any("unevaluatedProperties" in n for n in nodes) and any(
            "patternProperties" in n for n in nodes
        ):
            raise SchemaUnusable("unevaluatedProperties with patternProperties is not supported")
        for node in nodes:  # every pattern must compile in RE2 now, not at the first call
            for key in ("pattern",):
                if isinstance(node.get(key), str):
                    _re2(node[key])
            if isinstance(node.get("patternProperties"), dict):
                for pattern in node["patternProperties"]:
                    _re2(pattern)
        self._validator = cls(schema, registry=_REGISTRY)
        open_keys = ("additionalProperties", "unevaluatedProperties", "patternProperties")
        properties = schema.get("properties")
        if strict and isinstance(properties, dict) and not any(k in schema for k in open_keys):
            self._declared = frozenset(properties)

    async def check(self, arguments: Any) -> list[ArgumentError]:
        """:meth:`errors`, on the checking thread when the arguments hold more than
        :data:`OFF_LOOP_VALUES` JSON values, so that a large call does not stall the loop."""
        if self.problem is None and more_values_than(arguments, OFF_LOOP_VALUES):
            return await check_off_loop(self.errors, arguments)
        return self.errors(arguments)

    def errors(self, arguments: Any) -> list[ArgumentError]:
        if self.problem is not None:
            return [ArgumentError("$", f"the tool cannot be called: {self.problem}")]
        if not isinstance(arguments, dict):
            return [ArgumentError("$", "arguments must be an object")]
        found: list[ArgumentError] = []
        if self._declared is not None:
            for key in sorted(set(arguments) - self._declared):
                message = "undeclared argument (the tool's schema does not declare it)"
                found.append(ArgumentError(f"$.{key}", message))
        try:
            with spending(arguments):
                for error in self._validator.iter_errors(arguments):
                    found.append(ArgumentError(_json_path(error), error.message[:MAX_MESSAGE]))
                    if len(found) >= MAX_ERRORS:
                        break
        except TooCostly:
            return [ArgumentError("$", TOO_COSTLY)]
        except SchemaUnusable as exc:
            return [ArgumentError("$", f"the tool cannot be called: {exc}")]
        except Exception:  # an unresolvable $ref or any other schema failure: fail closed
            return [ArgumentError("$", "the tool cannot be called: its schema does not resolve")]
        return found[:MAX_ERRORS]


class ValidatorCache:
    """Compiled validators per (tool definition hash, strictness), least recently used out first;
    at most ``budget`` bytes of their schemas' JSON (a validator holds its schema)."""

    def __init__(self, budget: int = 16 * 1024 * 1024) -> None:
        self._entries: Weighed[tuple[str, bool], ArgumentValidator] = weighed(budget)

    @property
    def kept_bytes(self) -> int:
        return int(self._entries.currsize)

    def get(self, sha256: str, schema: Any, *, strict: bool) -> ArgumentValidator:
        key = (sha256, strict)
        kept = find(self._entries, key)
        if kept is not None:
            return kept
        validator = ArgumentValidator(schema, strict=strict)
        weight = len(json.dumps(schema, separators=(",", ":"), default=str)) + 512
        keep(self._entries, key, validator, weight)
        return validator
