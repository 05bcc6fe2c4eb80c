"""Exception handlers: every error leaves the app in the one body shape of DESIGN §4/§13.

Validation errors become 400 ``invalid_request`` with ``details: [{loc, msg}]`` and never the
``input`` or ``ctx`` pydantic puts in them (those can hold a submitted secret). Starlette's own
HTTP errors (unknown route 404, wrong method 405) get the same shape.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: TID251
from starlette.routing import Match, Route

from hub.core.body_encoding import NOT_UTF8
from hub.core.components import components_of
from hub.core.db_errors import database_unavailable, sqlstate_in
from hub.core.errors import BadRequest, Conflict, HubError, ServiceUnavailable, error_body

__all__ = [
    "FailureHook",
    "FailureHooks",
    "install_exception_handlers",
    "refuses_its_methods",
    "request_id_of",
]

FailureHook = Callable[[Request, Exception], Awaitable[None]]


@dataclass(frozen=True)
class FailureHooks:
    """What runs when a request ends in an error (the audit of denied and failed attempts)."""

    hooks: tuple[FailureHook, ...] = ()


log = logging.getLogger("hub.errors")

_STARLETTE_CODES = {
    400: ("invalid_request", "the request is invalid"),
    401: ("unauthorized", "a valid API key is required"),
    403: ("forbidden", "not permitted"),
    404: ("not_found", "not found"),
    405: ("method_not_allowed", "method not allowed"),
    406: ("not_acceptable", "not acceptable"),
    413: ("payload_too_large", "the request body is too large"),
    415: ("unsupported_media_type", "unsupported media type"),
}


async def _run_failure_hooks(request: Request, exc: Exception) -> None:
    """Let the app's failure hooks (audit of denied/failed attempts) see the error."""
    parts = components_of(request.app)
    if FailureHooks in parts:
        for hook in parts.get(FailureHooks).hooks:
            await hook(request, exc)


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or "")


def _safe_details(errors: Any) -> list[dict[str, Any]]:
    details = []
    for err in errors:
        loc = [p for p in err.get("loc", ()) if isinstance(p, str | int)]
        msg = str(err.get("msg", "invalid value"))
        details.append({"loc": loc, "msg": msg})
    return details


async def _hub_error(request: Request, exc: Exception) -> JSONResponse:
    exc = cast(HubError, exc)
    await _run_failure_hooks(request, exc)
    headers = dict(exc.headers)
    if exc.status_code == 401:
        headers["www-authenticate"] = "Bearer"
    return JSONResponse(exc.body(request_id_of(request)), exc.status_code, headers=headers or None)


NOT_JSON = "the request body must be JSON, sent with content-type: application/json"
NO_CONTENT_TYPE = (
    "the request body has no content-type; send it as JSON with content-type: application/json"
)
NO_BODY = "this request needs a JSON body (content-type: application/json)"


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _validation_message(request: Request, errors: list[Any]) -> str | None:
    """A clear message when the body as a whole is unusable, instead of pydantic's "Input should
    be a valid dictionary" (what a ``curl -d`` without ``-H content-type`` gets)."""
    whole = [err for err in errors if tuple(err.get("loc", ())) == ("body",)]
    if not whole:
        return None
    content_type = request.headers.get("content-type")
    if whole[0].get("type") == "missing":
        return NO_BODY
    if content_type is None:
        return NO_CONTENT_TYPE
    return None if _is_json(content_type) else NOT_JSON


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    await _run_failure_hooks(request, exc)
    errors = cast(RequestValidationError, exc).errors()
    body = BadRequest(_validation_message(request, list(errors))).body(request_id_of(request))
    body["error"]["details"] = _safe_details(errors)
    return JSONResponse(body, 400)


_REFUSES = "hub_refuses_its_methods"

_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])


def refuses_its_methods(endpoint: _Endpoint) -> _Endpoint:
    """Mark an endpoint that answers its methods 405 itself (MCP's ``GET`` with no stream to
    offer): they are left out of another 405's ``Allow``, which lists what the path serves."""
    setattr(endpoint, _REFUSES, True)
    return endpoint


def _allowed(request: Request) -> str:
    """Every method the request's path has, for a 405's ``Allow`` (RFC 9110 §15.5.6). Starlette
    names only the first route whose path matched, and FastAPI makes a route per method: a
    ``PUT`` on a deployment was told ``GET`` although ``PATCH`` and ``DELETE`` exist too. Read
    on a 405 only, from the app's table (:class:`~hub.core.route_index.RouteIndex` has no path
    and is passed over)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if (
            isinstance(route, Route)
            and route.methods
            and not getattr(route.endpoint, _REFUSES, False)
        ):
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                methods |= route.methods
    return ", ".join(sorted(methods))


async def _starlette_error(request: Request, exc: Exception) -> JSONResponse:
    exc = cast(StarletteHTTPException, exc)
    code, message = _STARLETTE_CODES.get(exc.status_code, ("http_error", "request failed"))
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405 and (allow := _allowed(request)):
        headers = {"allow": allow}
    if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
        message = NOT_UTF8  # FastAPI's parse of a body that is not UTF-8 (hub.core.body_encoding)
    # a body over the bound names the bound, as one refused by its Content-Length does
    extra = {"max_bytes": limit} if (limit := getattr(exc, "max_bytes", None)) else {}
    return JSONResponse(
        error_body(code, message, request_id_of(request), **extra),
        exc.status_code,
        headers=headers,
    )


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    # A dropped connection or an unreachable server: 503, not a 500 with driver text.
    state = sqlstate_in(exc)
    log.warning(
        "database unavailable: %s%s", type(exc).__name__, f" (SQLSTATE {state})" if state else ""
    )
    return JSONResponse(ServiceUnavailable().body(request_id_of(request)), 503)


async def _dbapi_error(request: Request, exc: Exception) -> JSONResponse:
    # With asyncpg, a connection the server closed mid-statement and a server still starting up
    # (a database restart) are plain DBAPIErrors: a 503 like any unreachable database.
    if database_unavailable(exc):
        return await _database_error(request, exc)
    raise exc


async def _integrity_error(request: Request, exc: Exception) -> JSONResponse:
    # Two requests raced past the same uniqueness check (a slug, a handle, a grant): the database's
    # constraint decided, and the loser gets the 409 the check would have given it.
    log.warning("integrity error turned into 409: %s", type(exc.__cause__ or exc).__name__)
    error = Conflict("the request conflicts with data that was just written")
    await _run_failure_hooks(request, error)
    return JSONResponse(error.body(request_id_of(request)), 409)


def install_exception_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HubError, _hub_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _starlette_error)
    app.add_exception_handler(IntegrityError, _integrity_error)
    app.add_exception_handler(OperationalError, _database_error)
    app.add_exception_handler(InterfaceError, _database_error)
    # every pooled connection is busy past the pool's wait (a lock held long, a frozen server)
    app.add_exception_handler(PoolTimeout, _database_error)
    app.add_exception_handler(DBAPIError, _dbapi_error)
    # refused, or reset while connecting (a server going down accepts, then drops the socket)
    app.add_exception_handler(ConnectionError, _database_error)
