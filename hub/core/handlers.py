"""Exception handlers: every error leaves the app in the one body shape of DESIGN §4/§13.

Validation errors become 400 ``invalid_request`` with ``details: [{loc, msg}]`` and never the
``input`` or ``ctx`` pydantic puts in them (those can hold a submitted secret). Starlette's own
HTTP errors (unknown route 404, wrong method 405) get the same shape.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: TID251

from hub.core.components import components_of
from hub.core.errors import BadRequest, Conflict, HubError, ServiceUnavailable, error_body

__all__ = ["FailureHook", "FailureHooks", "install_exception_handlers", "request_id_of"]

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


async def _starlette_error(request: Request, exc: Exception) -> JSONResponse:
    exc = cast(StarletteHTTPException, exc)
    code, message = _STARLETTE_CODES.get(exc.status_code, ("http_error", "request failed"))
    headers = dict(exc.headers) if exc.headers else None
    return JSONResponse(
        error_body(code, message, request_id_of(request)), exc.status_code, headers=headers
    )


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    # A dropped connection or an unreachable server: 503, not a 500 with driver text.
    log.warning("database unavailable: %s", type(exc).__name__)
    return JSONResponse(ServiceUnavailable().body(request_id_of(request)), 503)


#: SQLSTATEs of a server that is away: connection exceptions (08), shutting down, crashed or
#: starting up (57P01-57P03), out of connections or memory (53).
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03", "53")


def _server_unavailable(exc: DBAPIError) -> bool:
    if exc.connection_invalidated:  # SQLAlchemy saw a disconnect and emptied the pool
        return True
    state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return isinstance(state, str) and state.startswith(_UNAVAILABLE_STATES)


async def _dbapi_error(request: Request, exc: Exception) -> JSONResponse:
    # With asyncpg, a connection the server closed mid-statement and a server still starting up
    # (a database restart) are plain DBAPIErrors: a 503 like any unreachable database.
    if isinstance(exc, DBAPIError) and _server_unavailable(exc):
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
    app.add_exception_handler(DBAPIError, _dbapi_error)
    # refused, or reset while connecting (a server going down accepts, then drops the socket)
    app.add_exception_handler(ConnectionError, _database_error)
