"""Steering generated cases towards the seeded world and towards values that break things.

schemathesis generates every parameter from the OpenAPI document, so a random UUID or handle only
ever reaches "not found", and a generated string rarely holds the bytes a database chokes on.
:func:`flatmap_case` (registered as the schema's ``flatmap_case`` hook) takes each generated case
and lets Hypothesis choose, value by value, between the generated value and

- a real one: a ``@fuzz:<name>`` token that :class:`tests.fuzz.world.FuzzWorld` replaces with the
  seeded object's id just before sending, or a value from a small pool (URLs the offline fetcher
  judges without any I/O, grant patterns, credential metadata, known handles and versions);
- a nasty one (:data:`NASTY_STRINGS` with NUL and lone surrogates, :data:`NASTY_INTEGERS`,
  the finite :data:`NASTY_NUMBERS`, and :data:`DEEP`, an object nested 600 levels, for metadata,
  conditions and lists of objects) for any other value of a body, and cursors whose time leaves
  the calendar in UTC (schemathesis' own fuzz dictionaries cover path, query and headers).

The generated value stays one of the choices everywhere, so nothing the plain fuzz sends is lost.
Hooks do not see the coverage phase's deterministic cases; :func:`anchor_coverage_case` points
their ids at the seeded objects instead.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from hypothesis import strategies as st
from schemathesis import Case, HookContext
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import CoveragePhaseData

from tests.fuzz.world import (
    CREDENTIAL_ORIGIN,
    SERVER_HANDLE,
    SURROGATE_MARK,
    TOKEN,
    is_platform_path,
)

__all__ = [
    "NASTY_BODY_STRINGS",
    "NASTY_INTEGERS",
    "NASTY_NUMBERS",
    "NASTY_STRINGS",
    "anchor_coverage_case",
    "flatmap_case",
    "real_path_parameters",
]

Strategy = st.SearchStrategy[Any]

# Values databases, parsers and encoders choke on.
NASTY_STRINGS = [
    "\u0000",
    "nul\u0000inside",
    "\u202egnp.exe\U0001d4e3",
    "' OR '1'='1 --",
    "../%2e%2e/\\",
    "a" * 5000,
]
# Bodies are JSON, which can carry lone surrogates (``\ud800`` escapes) that no UTF-8 path or
# header can; schemathesis cannot hold them in a case either, so a marker stands in for one and
# FuzzWorld.send writes the escape into the serialised body (tests.fuzz.world.SURROGATE_MARK).
NASTY_BODY_STRINGS = [*NASTY_STRINGS, SURROGATE_MARK, f"lone{SURROGATE_MARK}surrogate"]
NASTY_INTEGERS = [0, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30]
# Finite floats only: NaN and Infinity are not JSON, so no client can send them as numbers.
NASTY_NUMBERS = [0.0, -0.0, 5e-324, 1e308, -1.7976931348623157e308, 0.1]


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


def _cursor(stamp: str) -> str:
    raw = json.dumps([stamp, "00000000-0000-0000-0000-000000000000"]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# A body nested deeper than any route accepts (once a RecursionError and a 500).
DEEP = _nested(600)

# Percent chances (out of 100) of replacing a generated value.
P_TENANT = 90  # the seeded tenant in {t}: with a random tenant every route just reads 404
P_REAL = 50  # a seeded object's id, or a value from a pool
P_NASTY = 20  # any other string or integer of a body


def _token(name: str) -> str:
    return f"{TOKEN}{name}"


_URLS = [
    f"{CREDENTIAL_ORIGIN}/mcp",  # the credential's origin: passes every static rule, dial refused
    "https://mcp.example.com/mcp",  # resolves, outside the credential's origin
    "https://93.184.216.34/mcp",  # a public literal: dial refused
    "https://10.0.0.1/mcp",  # private: refused by the destination policy
    "https://[::1]/mcp",  # loopback literal: refused (HUB_ALLOW_LOOPBACK is off)
    "https://localhost/mcp",  # no DNS here
    "http://127.0.0.1:9/mcp",  # plain http: refused before any I/O
    "https://unknown.invalid/mcp",  # does not resolve
    "ftp://canary.example.com/mcp",
]
_BASE_URLS = [CREDENTIAL_ORIGIN, "https://mcp.example.com", "http://127.0.0.1:9", "not a url"]
_RESOURCES = [
    "tool:*",
    f"tool:{SERVER_HANDLE}.*",
    f"tool:{SERVER_HANDLE}.alpha",
    f"server:{SERVER_HANDLE}",
    "server:*",
    "catalog:*",
    f"credential:{_token('c')}",
    f"deployment:{_token('d')}",
    f"principal:{_token('p')}",
    "grant:*",
    "approval:*",
    "audit",
    "audit:x",
]
_CONDITIONS = [
    {"time_window": {"start": "09:00", "end": "17:00", "tz": "Europe/Paris", "days": ["mon"]}},
    {"time_window": {"start": "17:00", "end": "09:00", "tz": "UTC"}},
    {"time_window": {"start": "25:00", "end": "09:00", "tz": "Mars/Olympus"}},
    DEEP,
]
# Instants at the edges of what datetime and the databases hold, and one with an odd offset.
_INSTANTS = [
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999999Z",
    "2099-02-28T12:00:00.5+05:45",
]
_METADATA = [{"mcp": {"auth": "none"}}, {"mcp": {"auth": "bearer"}}, {"mcp": "none"}, DEEP]
# Body field → the real values it may take instead of the generated one.
_BODY_POOLS: dict[str, list[Any]] = {
    "principal_id": [_token("p")],
    "agent_id": [_token("p")],
    "credential_id": [_token("c")],
    "url": _URLS,
    "api_base_url": _BASE_URLS,
    "resource": _RESOURCES,
    "conditions": _CONDITIONS,
    "metadata": _METADATA,
    "type": ["api_key", "oauth_token", "basic"],
    "handle": [SERVER_HANDLE],
    "slug": [_token("slug")],
    "version": [1, 2],
    "expires_at": _INSTANTS,
    "old_key_expires_at": _INSTANTS,
}
_ENTRY_POOLS: dict[str, list[Any]] = {
    "server": [_token("handle")],
    "catalog_version": [1, 2],
    "allow_without_ask": [["alpha"], ["alpha", "beta"], ["missing"]],
}
_QUERY_POOLS: dict[str, list[Any]] = {
    "principal_id": [_token("p")],
    "from": [1, 2],
    "cursor": [
        _token("cursor"),
        _cursor("9999-12-31T23:59:59-23:59"),  # outside the calendar once in UTC
        _cursor("0001-01-01T00:00:00+23:59"),
    ],
    "limit": [1],
}


def _maybe(generated: Any, choices: list[Any], percent: int) -> Strategy:
    """``generated``, or (about ``percent`` times in 100) one of ``choices``."""
    replaced = st.sampled_from(choices)
    return st.integers(0, 99).flatmap(lambda n: replaced if n < percent else st.just(generated))


def _real_path_value(path: str, name: str) -> str | None:
    """The token (or literal) naming the seeded object for parameter ``name`` of ``path``."""
    if name == "k":
        return _token("pk" if is_platform_path(path) else "k")
    if name == "version":
        return "1"
    if name == "decision_id":  # sealed and short-lived: none can be seeded, any other is refused
        return "not-a-decision"
    if name in ("t", "p", "g", "c", "d", "a", "o", "handle"):
        return _token(name)
    return None


def real_path_parameters(path: str) -> dict[str, str]:
    """Every parameter of the path template ``path``, naming a seeded object."""
    names = re.findall(r"{(\w+)}", path)
    return {name: value for name in names if (value := _real_path_value(path, name)) is not None}


def anchor_coverage_case(case: Case[Any]) -> None:
    """Point a coverage-phase case's path at the seeded objects, except the parameter it probes."""
    meta = case.meta
    if meta is None or not isinstance(meta.phase.data, CoveragePhaseData):
        return
    data = meta.phase.data
    probed = data.parameter if data.parameter_location == ParameterLocation.PATH else None
    path = dict(case.path_parameters)
    for name in path:
        real = _real_path_value(case.path, name)
        if name != probed and real is not None:
            path[name] = real
    case.path_parameters = path


def _path_strategy(case: Case[Any]) -> Strategy:
    parts: dict[str, Strategy] = {}
    for name, value in case.path_parameters.items():
        real = _real_path_value(case.path, name)
        if real is None:
            parts[name] = st.just(value)
            continue
        choices = ["1", "2"] if name == "version" else [real]
        parts[name] = _maybe(value, choices, P_TENANT if name == "t" else P_REAL)
    return st.fixed_dictionaries(parts)


def _value_strategy(name: str, value: Any, pools: dict[str, list[Any]]) -> Strategy:
    if name in pools:
        return _maybe(value, pools[name], P_REAL)
    if name == "entries" and isinstance(value, list):
        return st.tuples(*(_value_strategy("", entry, _ENTRY_POOLS) for entry in value)).map(list)
    if isinstance(value, dict):
        return st.fixed_dictionaries(
            {key: _value_strategy(key, item, pools) for key, item in value.items()}
        )
    if isinstance(value, str):
        return _maybe(value, NASTY_BODY_STRINGS, P_NASTY)
    if isinstance(value, int) and not isinstance(value, bool):
        return _maybe(value, NASTY_INTEGERS, P_NASTY)
    if isinstance(value, float):
        return _maybe(value, NASTY_NUMBERS, P_NASTY)
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return _maybe(value, [[DEEP]], P_NASTY)
    return st.just(value)


def _query_strategy(case: Case[Any]) -> Strategy:
    parts = {
        name: _maybe(value, _QUERY_POOLS[name], P_REAL) if name in _QUERY_POOLS else st.just(value)
        for name, value in case.query.items()
    }
    return st.fixed_dictionaries(parts)


def _headers_strategy(case: Case[Any]) -> Strategy:
    headers = dict(case.headers)
    if not case.path.endswith("/bundle"):
        return st.just(headers)
    name = next((n for n in headers if n.lower() == "if-none-match"), "If-None-Match")
    return _maybe(headers.get(name), [_token("etag"), "*", 'W/"x"'], P_REAL).map(
        lambda value: {**headers, name: value} if value is not None else headers
    )


def _apply(case: Case[Any], parts: dict[str, Any]) -> Case[Any]:
    case.path_parameters = parts["path"]
    case.query = parts["query"]
    case.headers.clear()
    case.headers.update(parts["headers"])
    if "body" in parts:
        case.body = parts["body"]
    return case


def flatmap_case(context: HookContext, case: Case[Any]) -> st.SearchStrategy[Case[Any]]:
    """The schema hook: ``case`` with some generated values swapped for real or nasty ones."""
    parts: dict[str, Strategy] = {
        "path": _path_strategy(case),
        "query": _query_strategy(case),
        "headers": _headers_strategy(case),
    }
    if isinstance(case.body, dict):
        parts["body"] = _value_strategy("", case.body, _BODY_POOLS)
    return st.fixed_dictionaries(parts).map(lambda chosen: _apply(case, chosen))
