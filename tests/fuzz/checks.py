"""The properties every fuzzed response must hold, as schemathesis checks.

- ``not_a_server_error`` (schemathesis' own): no 5xx, ever;
- ``response_schema_conformance`` (schemathesis' own): every body matches the schema the
  document declares for its status — for 2xx the typed ``Envelope[…Read]`` of the route;
- :func:`error_shape`: one ``x-request-id`` on every response; an error body is exactly
  ``{"error": {"code", "message", "request_id", …}}`` (DESIGN §4, §13; a JSON-RPC error on the
  agents' MCP endpoint; unless the operation documents an HTML page for that status: the OAuth
  callback answers a browser) whose ``request_id`` is that header, whose extra fields are only
  ``reason``, ``details`` (items exactly ``{loc, msg}``: never pydantic's ``input`` or ``ctx``)
  and, on a 403, ``resource`` and ``action``; and every 401 body is the same one;
- :func:`known_status`: the status is documented for the operation or a standard error;
- the check :func:`make_no_secret_echoed` builds: no canary and no seeded key in any header or
  body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from schemathesis import Case, CheckContext, Response
from schemathesis.checks import not_a_server_error, response_schema_conformance

__all__ = [
    "STANDARD_ERRORS",
    "Check",
    "error_shape",
    "known_status",
    "make_no_secret_echoed",
    "not_a_server_error",
    "response_schema_conformance",
]

STANDARD_ERRORS = frozenset({400, 401, 403, 404, 409, 422})
UNAUTHORIZED = {"code": "unauthorized", "message": "a valid API key is required"}
_CODE = re.compile(r"^[a-z][a-z0-9_]*$")
_ERROR_FIELDS = {"code", "message", "request_id"}
_ERROR_EXTRAS = {
    "details",
    "reason",
    "resource",
    "action",
    "credential_sent",
    "retry_after_s",
    "limit",
}

Check = Callable[[CheckContext, Response, Case[Any]], bool | None]


def _header(response: Response, name: str) -> list[str]:
    return response.headers.get(name.lower(), [])


def error_shape(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """Every response has one ``x-request-id``; every error has the DESIGN body."""
    ids = _header(response, "x-request-id")
    assert len(ids) == 1, f"x-request-id headers: {ids!r}"
    assert ids[0], "empty x-request-id"
    if response.status_code < 400:
        return None
    content_type = (_header(response, "content-type") or [""])[0]
    if content_type.startswith("text/html") and _documents_html(case, response.status_code):
        return None
    assert content_type.startswith("application/json"), f"error content-type {content_type!r}"
    try:
        body = json.loads(response.content)
    except ValueError as exc:
        raise AssertionError(f"error body is not JSON: {response.content[:200]!r}") from exc
    assert isinstance(body, dict), f"error body is not an object: {body!r}"
    if case.path.endswith("/mcp") and "jsonrpc" in body:
        _check_json_rpc_error(body)
        return None
    assert set(body) == {"error"}, f"error body keys {sorted(body)}"
    error = body["error"]
    assert isinstance(error, dict), f"error is not an object: {error!r}"
    for name in sorted(_ERROR_FIELDS):
        assert isinstance(error.get(name), str), f"error.{name} is not a string: {error!r}"
        assert error[name], f"error.{name} is empty"
    assert _CODE.match(error["code"]), f"error.code is not snake_case: {error['code']!r}"
    assert error["request_id"] == ids[0], "error.request_id differs from x-request-id"
    extras = set(error) - _ERROR_FIELDS
    assert extras <= _ERROR_EXTRAS, f"unexpected error fields {sorted(extras)}"
    if "reason" in error:
        assert isinstance(error["reason"], str), f"error.reason: {error['reason']!r}"
        assert _CODE.match(error["reason"]), f"error.reason: {error['reason']!r}"
    if "details" in error:
        _check_details(error["details"])
    if response.status_code == 401:
        rest = {key: value for key, value in error.items() if key != "request_id"}
        assert rest == UNAUTHORIZED, f"a 401 body that is not the uniform one: {error!r}"
    return None


def _check_json_rpc_error(body: dict[str, Any]) -> None:
    """The agents' MCP endpoint answers errors as JSON-RPC (DESIGN §10.4): a code, the hub's
    message and its class in ``data``; never an echo of the request."""
    assert set(body) == {"jsonrpc", "id", "error"}, f"JSON-RPC error keys {sorted(body)}"
    error = body["error"]
    assert isinstance(error, dict), f"JSON-RPC error is not an object: {error!r}"
    assert type(error.get("code")) is int, f"JSON-RPC error code: {error!r}"
    assert isinstance(error.get("message"), str), f"JSON-RPC error message: {error!r}"
    assert set(error) <= {"code", "message", "data"}, f"JSON-RPC error fields {sorted(error)}"


def _documents_html(case: Case[Any], status: int) -> bool:
    documented = case.operation.definition.raw.get("responses", {}).get(str(status), {})
    return "text/html" in (documented.get("content") or {})


def _check_details(details: Any) -> None:
    assert isinstance(details, list), f"error.details is not a list: {details!r}"
    for detail in details:
        assert isinstance(detail, dict), f"error.details item: {detail!r}"
        assert set(detail) == {"loc", "msg"}, f"error.details item must be {{loc, msg}}: {detail!r}"
        assert isinstance(detail["loc"], list), f"error.details[].loc: {detail!r}"
        assert isinstance(detail["msg"], str), f"error.details[].msg: {detail!r}"


def known_status(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """Documented for this operation, or a standard error (405 for a method the route lacks);
    5xx are ``not_a_server_error``'s to report."""
    status = response.status_code
    if status >= 500:
        return None
    documented = {int(code) for code in case.operation.responses.status_codes if code.isdigit()}
    if case.method.upper() != case.operation.method.upper():
        # the coverage phase also sends a method the route does not have
        documented = {405}
    assert status in documented | STANDARD_ERRORS, (
        f"status {status} is neither documented ({sorted(documented)}) nor a standard error"
    )
    return None


def make_no_secret_echoed(secrets: list[str]) -> Check:
    """A check that no header or body contains one of ``secrets`` (the first is the canary)."""
    encoded = [secret.encode() for secret in secrets]

    def no_secret_echoed(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        for name, values in response.headers.items():
            for value in [name, *values]:
                leaked = [index for index, secret in enumerate(secrets) if secret in value]
                assert not leaked, f"secret #{leaked[0]} is echoed in header {name!r}"
        for index, secret in enumerate(encoded):
            what = "the canary" if index == 0 else "an API key"
            assert secret not in response.content, f"{what} (secret #{index}) is in the body"
        return None

    return no_secret_echoed
