"""Property-based fuzz of every operation in the hub's own OpenAPI document (schemathesis).

For each operation schemathesis builds a Hypothesis test from the document: the coverage phase's
deterministic boundary and negative values per parameter (plus one method the route does not
have), then random positive and negative examples. :mod:`tests.fuzz.strategies` points ids at
the seeded tenant's real objects and mixes values that break databases and parsers into bodies.
Each case goes in-process to a fresh app holding the seeded tenant (:mod:`tests.fuzz.world`), as
the tenant's ``tenant_admin`` (the platform routes as the platform admin), and every response
must hold (:mod:`tests.fuzz.checks`): no 5xx; the DESIGN error body with ``x-request-id`` equal
to its ``request_id``; a documented or standard status; no canary secret and no key anywhere.

Discovery and catalog snapshots are fuzzed too: the app's fetcher resolves no name through DNS
and dials nothing (:mod:`tests.fuzz.network`), so nothing here can send a packet off the machine.

The run is deterministic (Hypothesis derandomised, a fixed seed, no example database, no
shrinking) and bounded: ``MAX_EXAMPLES`` random examples per generation mode and operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import APIOperation, Case
from schemathesis.errors import FailureGroup

from hub.app import create_app
from tests.conftest import make_settings
from tests.fuzz.checks import (
    Check,
    error_shape,
    known_status,
    make_no_secret_echoed,
    not_a_server_error,
    response_schema_conformance,
)
from tests.fuzz.strategies import (
    NASTY_INTEGERS,
    NASTY_STRINGS,
    anchor_coverage_case,
    flatmap_case,
    real_path_parameters,
)
from tests.fuzz.world import FuzzWorld, Seed, fuzz_world, make_seed

SEED = 20_260_101
# Random examples per operation and generation mode (positive, negative), after the coverage phase.
MAX_EXAMPLES = 10
# Routes that answer without a key (the OAuth callback is authorised by its state alone: none
# here, so it refuses with its 400 page).
PUBLIC_PATHS = {"/healthz", "/readyz", "/metrics", "/oauth/client-metadata.json"}
STATE_PATHS = {"/oauth/callback"}


def _openapi_document() -> dict[str, Any]:
    """The app's own document (what ``GET /openapi.json`` serves), built without starting it."""
    return create_app(make_settings()).openapi()


CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        # schemathesis' fuzz dictionaries reach path, query and header values; the body gets
        # the same values from tests.fuzz.strategies
        "dictionaries": {
            "nasty-strings": {"values": NASTY_STRINGS},
            "nasty-integers": {"values": NASTY_INTEGERS},
        },
        "generation": {
            "mode": "all",
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "no-shrink": True,
            "database": "none",
            # every case is sent with the actor's key; test_broken_credentials_* covers 401s
            "with-security-parameters": False,
            "dictionaries": {
                "string": {"dictionary": "nasty-strings", "probability": 0.15},
                "integer": {"dictionary": "nasty-integers", "probability": 0.15},
            },
        },
        "phases": {
            "examples": {"enabled": False},  # the document has no examples
            "coverage": {"enabled": True, "unexpected-methods": ["TRACE"]},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": False},
        },
    }
)
schema = schemathesis.openapi.from_dict(_openapi_document(), config=CONFIG)
schema.hook(flatmap_case)


@pytest.fixture(scope="session")
def fuzz_seed(db_url: str) -> Seed:
    """The seeded tenant, made once per backend; each test starts from a copy of its rows."""
    return make_seed(make_settings(db_url))


@pytest.fixture
def world(db_url: str, fuzz_seed: Seed) -> Iterator[FuzzWorld]:
    # rate limits off: hundreds of discoveries of one tenant would otherwise be mostly 429s
    # (their shape is checked all the same wherever one occurs: tests/ratelimit/)
    unlimited = "rest=off, tool_call=off, discovery=off, snapshot=off"
    with fuzz_world(make_settings(db_url, rate_limits=unlimited), fuzz_seed) as made:
        yield made


def _checks(world: FuzzWorld) -> list[Check]:
    return [
        not_a_server_error,
        response_schema_conformance,
        error_shape,
        known_status,
        make_no_secret_echoed(world.seed.secrets),
    ]


# The world is shared by an operation's examples on purpose (it is rebuilt for every operation).
@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_api_fuzz(case: Case[Any], world: FuzzWorld) -> None:
    anchor_coverage_case(case)
    world.materialise(case)
    response = world.send(case)
    case.validate_response(response, checks=_checks(world))


def _operations() -> list[APIOperation[Any, Any, Any, Any]]:
    paths: dict[str, dict[str, Any]] = schema.raw_schema["paths"]
    return [schema[path][method] for path, item in paths.items() for method in item]


def _broken_credentials(seed: Seed) -> dict[str, dict[str, str]]:
    unknown = "hub_AAAAAAAAAAAA_" + "A" * 38  # well-formed, wrong checksum
    return {
        "no key": {},
        "empty bearer": {"authorization": "Bearer "},
        "bad checksum": {"authorization": f"Bearer {unknown}"},
        "malformed key": {"x-api-key": "hub_" + "\u00e9" * 8},
        "revoked key": {"x-api-key": seed.revoked_key},
    }


def _violations(
    world: FuzzWorld, case: Case[Any], *, authenticate: bool = True
) -> tuple[int, list[str]]:
    """Send ``case``; its status and the checks it fails (one line each)."""
    world.materialise(case)
    response = world.send(case, authenticate=authenticate)
    try:
        case.validate_response(response, checks=_checks(world))
    except FailureGroup as group:
        found = [f"{failure.title}: {failure.message}".strip(": ") for failure in group.exceptions]
        return response.status_code, [line.splitlines()[0] for line in found]
    return response.status_code, []


def test_broken_credentials_get_the_uniform_401(world: FuzzWorld) -> None:
    """Every operation but the public ones answers the one 401 body to any broken key."""
    problems: list[str] = []
    for operation in _operations():
        expected = 200 if operation.path in PUBLIC_PATHS else 401
        expected = 400 if operation.path in STATE_PATHS else expected
        for variant, headers in _broken_credentials(world.seed).items():
            path_parameters = real_path_parameters(operation.path)
            case = operation.Case(path_parameters=path_parameters, headers=headers)
            status, violations = _violations(world, case, authenticate=False)
            if status != expected:
                violations.append(f"status {status}, expected {expected}")
            problems += [f"{operation.label} ({variant}): {line}" for line in violations]
    assert not problems, "\n".join(problems)


@dataclass(frozen=True)
class Finding:
    """A minimal request the fuzz (or probing around what it found) answered with a 5xx."""

    name: str
    method: str
    path: str
    body: Any = None
    path_parameters: dict[str, str] = field(default_factory=dict)


_FAR_FUTURE = "9999-12-31T23:59:59-23:59"  # in range as written, past year 9999 in UTC
_FAR_PAST = "0001-01-01T00:00:00+23:59"  # before year 1 in UTC
_NUL = "\u0000"  # PostgreSQL text and jsonb cannot hold it
_CREDENTIAL = {
    "name": "c",
    "type": "api_key",
    "secret": "s-0123456789abcdef",
    "api_base_url": "https://x.example",
}
_DENY = {"principal_id": "@fuzz:p", "resource": "tool:x.*", "action": "call", "effect": "deny"}
_NUL_HANDLE = {"handle": _NUL}

# Defects found by this fuzz; each request must get a non-5xx DESIGN-shaped answer on both
# backends. They fail until the app is fixed (see the fuzz report).
FINDINGS = [
    # D1: an instant whose UTC value is outside datetime's range: OverflowError in
    # hub/core/dbtypes.py (process_bind_param, value.astimezone(UTC)) → 500 on both backends
    Finding("key-expiry", "POST", "/tenants/{t}/principals/{p}/keys", {"expires_at": _FAR_FUTURE}),
    Finding("platform-key-expiry", "POST", "/platform/keys", {"expires_at": _FAR_FUTURE}),
    Finding(
        "key-roll",
        "POST",
        "/tenants/{t}/principals/{p}/keys/{k}/roll",
        {"old_key_expires_at": _FAR_FUTURE},
    ),
    Finding(
        "platform-key-roll", "POST", "/platform/keys/{k}/roll", {"old_key_expires_at": _FAR_FUTURE}
    ),
    Finding("grant-expiry", "POST", "/tenants/{t}/grants", {**_DENY, "expires_at": _FAR_PAST}),
    Finding(
        "credential-expiry",
        "POST",
        "/tenants/{t}/credentials",
        {**_CREDENTIAL, "expires_at": _FAR_PAST},
    ),
    Finding(
        "credential-expiry-patch",
        "PATCH",
        "/tenants/{t}/credentials/{c}",
        {"expires_at": _FAR_FUTURE},
    ),
    # D2 (PostgreSQL): U+0000 in a stored string or JSON value, or in a handle that is looked up:
    # asyncpg "invalid byte sequence for encoding UTF8: 0x00" / "unsupported Unicode escape
    # sequence" at flush or query → 500
    Finding("tenant-name", "POST", "/tenants", {"slug": "nul-name", "name": _NUL}),
    Finding("tenant-name-patch", "PATCH", "/tenants/{t}", {"name": _NUL}),
    Finding("principal-name", "POST", "/tenants/{t}/principals", {"kind": "user", "name": _NUL}),
    Finding("principal-name-patch", "PATCH", "/tenants/{t}/principals/{p}", {"name": _NUL}),
    Finding("credential-name", "POST", "/tenants/{t}/credentials", {**_CREDENTIAL, "name": _NUL}),
    Finding("credential-name-patch", "PATCH", "/tenants/{t}/credentials/{c}", {"name": _NUL}),
    Finding(
        "credential-metadata",
        "POST",
        "/tenants/{t}/credentials",
        {**_CREDENTIAL, "metadata": {"k": _NUL}},
    ),
    Finding(
        "credential-metadata-patch",
        "PATCH",
        "/tenants/{t}/credentials/{c}",
        {"metadata": {_NUL: 1}},
    ),
    Finding(
        "deployment-name",
        "POST",
        "/tenants/{t}/deployments",
        {"agent_id": "@fuzz:p", "name": _NUL, "entries": []},
    ),
    Finding("deployment-name-patch", "PATCH", "/tenants/{t}/deployments/{d}", {"name": _NUL}),
    Finding(
        "deployment-entry-server",
        "PATCH",
        "/tenants/{t}/deployments/{d}",
        {"entries": [{"server": _NUL, "catalog_version": 1}]},
    ),
    Finding("server-get", "GET", "/tenants/{t}/servers/{handle}", path_parameters=_NUL_HANDLE),
    Finding(
        "server-delete", "DELETE", "/tenants/{t}/servers/{handle}", path_parameters=_NUL_HANDLE
    ),
    Finding(
        "catalog-list", "GET", "/tenants/{t}/servers/{handle}/catalogs", path_parameters=_NUL_HANDLE
    ),
    Finding(
        "catalog-snapshot",
        "POST",
        "/tenants/{t}/servers/{handle}/catalogs",
        path_parameters=_NUL_HANDLE,
    ),
]


def test_fuzz_findings(world: FuzzWorld) -> None:
    """The defects the fuzz found, as minimal requests; the message lists those still failing."""
    problems: list[str] = []
    for finding in FINDINGS:
        operation = schema[finding.path][finding.method]
        path_parameters = {**real_path_parameters(finding.path), **finding.path_parameters}
        if finding.body is None:
            case = operation.Case(path_parameters=path_parameters)
        else:
            case = operation.Case(path_parameters=path_parameters, body=finding.body)
        status, violations = _violations(world, case)
        label = f"{finding.name} ({finding.method} {finding.path}) → {status}"
        problems += [f"{label}: {line}" for line in violations]
    assert not problems, "\n".join(problems)


def test_the_fuzzed_document_is_the_served_one(world: FuzzWorld) -> None:
    served = world.request("GET", "/openapi.json")
    assert served.status_code == 200
    assert served.json() == _openapi_document()
    assert {operation.label for operation in _operations()} == {
        f"{method.upper()} {path}"
        for path, item in served.json()["paths"].items()
        for method in item
    }
