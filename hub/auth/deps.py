"""Who is calling: the authentication dependency of every authenticated route.

The key is taken from ``Authorization: Bearer`` or ``x-api-key`` (both present and different is a
401, and so is either header sent twice) and its checksum checked before anything touches the
database (:func:`parsed_key`), so garbage costs no connection and no query. It is authenticated
once per request, on the request's session (:func:`caller_of`, which a REST router's first
dependency calls, or the :func:`get_caller` dependency), and remembered on the request; its
principal and tenant are bound to the log context. Deciding what the caller may do is
:mod:`hub.authz`'s job.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth.caller import Caller
from hub.auth.key_format import ParsedKey, PepperProof, parse_key
from hub.auth.service import admit_key_values, authenticate
from hub.core.components import components_of
from hub.core.deps import SessionDep, get_settings_dep, session_of
from hub.core.errors import Unauthorized
from hub.core.logging import bind_context
from hub.core.readahead import read_ahead_of

__all__ = [
    "CallerDep",
    "admit_request_values",
    "authenticate_request",
    "caller_of",
    "get_caller",
    "parsed_key",
    "pepper_of",
    "presented_key",
]


def presented_key(request: Request) -> str | None:
    """The API key the request presents, or None; a malformed ``Authorization`` is a 401, and
    so is an ambiguous one: a second ``Authorization`` or ``x-api-key`` header, whatever its
    value (which of two keys a proxy or server would pick differs; the hub picks none)."""
    authorization, api_key = _key_headers(request.scope["headers"])
    bearer = None
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized()
        bearer = value.strip()
    if bearer is not None and api_key is not None and bearer != api_key:
        raise Unauthorized()
    return bearer if bearer is not None else api_key


def _key_headers(raw: Iterable[tuple[bytes, bytes]]) -> tuple[str | None, str | None]:
    """The ``Authorization`` and ``x-api-key`` values among the raw (lower-cased, ASGI) headers,
    in one pass over them (what two ``headers.get`` calls cost); a repeated one is a 401."""
    authorization: bytes | None = None
    api_key: bytes | None = None
    for name, value in raw:
        if name == b"authorization":
            if authorization is not None:
                raise Unauthorized()
            authorization = value
        elif name == b"x-api-key":
            if api_key is not None:
                raise Unauthorized()
            api_key = value
    return (
        None if authorization is None else authorization.decode("latin-1"),
        None if api_key is None else api_key.decode("latin-1"),
    )


async def parsed_key(request: Request) -> ParsedKey:  # async: no thread-pool hop
    """The presented key, well formed and with a valid checksum (no I/O), or a 401."""
    parsed = parse_key(presented_key(request))
    if parsed is None:
        raise Unauthorized()
    return parsed


async def get_caller(
    request: Request, key: Annotated[ParsedKey, Depends(parsed_key)], session: SessionDep
) -> Caller:
    return await authenticate_request(request, key, session)


async def caller_of(request: Request) -> Caller:
    """The request's caller (authenticated on its first call, remembered after), as a plain
    call rather than a node of the route's dependency tree, which FastAPI solves again on every
    request: the routes of a :func:`hub.authz.throttle.rest_router` authenticate in its
    rate-limit dependency, and their ``authorize`` dependency reads the caller it left."""
    cached: Caller | None = getattr(request.state, "caller", None)
    if cached is not None:
        return cached
    return await authenticate_request(request, await parsed_key(request), session_of(request))


async def authenticate_request(request: Request, key: ParsedKey, session: AsyncSession) -> Caller:
    """The caller ``key`` authenticates, on ``session`` (for endpoints that are not REST routes,
    such as the agents' MCP endpoint); remembered on the request, bound to the log context. An
    endpoint marked with :func:`hub.core.readahead.read_ahead` has its first read sent with the
    key's (:mod:`hub.core.readahead`)."""
    cached: Caller | None = getattr(request.state, "caller", None)
    if cached is not None:
        return cached
    spec = read_ahead_of(request.scope.get("endpoint"))
    ahead = None
    if spec is not None:
        params = spec.params(request.path_params, await _json_body(request) if spec.body else None)
        ahead = None if params is None else (spec, params)
    caller = await authenticate(session, pepper_of(request), key, request.state.request_id, ahead)
    return _remembered(request, caller)


async def _json_body(request: Request) -> Any:
    """The request's body as JSON (parsed once: FastAPI parsed it already for a route with a
    body model), or None when it is not JSON. It runs before FastAPI's own parse when the
    route's dependencies are solved ahead, so it sees the body first: nesting deep enough for
    ``RecursionError`` answered 500 here (stop 42)."""
    try:
        return await request.json()
    except (ValueError, RecursionError):  # not JSON, not UTF-8, too deep: the route answers it
        return None


def pepper_of(request: Request) -> bytes:
    """The API-key pepper of the app serving ``request`` (what :func:`hash_key` is keyed with)."""
    settings = get_settings_dep(request)
    return settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""


async def admit_request_values(
    request: Request, session: AsyncSession, values: Sequence[Any], computed: str
) -> Caller:
    """:func:`authenticate_request` for a key row already read on ``session`` by a definer that
    returns it first (:func:`hub.auth.service.admit_key_values`)."""
    caller = await admit_key_values(session, values, computed, request.state.request_id)
    return _remembered(request, caller)


def _remembered(request: Request, caller: Caller) -> Caller:
    request.state.caller = caller
    proof = components_of(request.app).get(PepperProof)
    if not proof.proven:
        proof.proven = True
    bind_context(
        principal_id=str(caller.principal_id),
        tenant_id=str(caller.tenant_id) if caller.tenant_id else None,
    )
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
