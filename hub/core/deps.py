"""Request-scoped dependencies shared by every domain: the settings, the database, the session.

``SessionDep`` is the request's one session, opened and ended by the route itself: every route
that may declare it is a :class:`SessionRoute` (the routers of :func:`hub.authz.throttle.
rest_router`, the console's, the OAuth callback's). The session's end (commit, or rollback on
error) comes when the endpoint has returned and its response is built, *before* the response is
sent: a client never sees 2xx for a write that then failed to commit (commit at the edge, STYLE).
Authentication and authorisation read on it too (the same instance for every dependency of a
request), so a request costs one session and, at a time, one pooled connection. Opening a
session takes no connection: a request that never reaches the database (a key with a bad
checksum) costs no connection and no query.

Why the route and not a ``yield`` dependency with ``scope="function"`` (which gives the same
order): FastAPI runs each such dependency under an exit stack and a shielded cancel scope of
anyio's, and that machinery cost about a tenth of an authenticated GET's CPU (measured in
process, issue 13); the route does the same in a ``try``.

A request with a method other than GET/HEAD/OPTIONS gets a write session, unless its endpoint is
marked :func:`reads_only` (a POST that only computes an answer, such as a grant check): on SQLite
a write session takes the database's write lock, which such a request has no use for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request, Response, params
from sqlalchemy.ext.asyncio import AsyncSession

from hub.core import presolve, rls
from hub.core.body_encoding import refuse_undecodable
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.route_shape import ShapedRoute
from hub.core.settings import Settings

__all__ = [
    "DatabaseDep",
    "SessionDep",
    "SessionRoute",
    "SettingsDep",
    "answer_with",
    "carry_headers",
    "get_database",
    "get_settings_dep",
    "reads_only",
    "request_session",
    "session_of",
]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_READS_ONLY = "_hub_reads_only"
F = TypeVar("F", bound=Callable[..., Any])


def reads_only(endpoint: F) -> F:
    """Mark an endpoint whose request never writes, whatever its method: it gets a read session."""
    setattr(endpoint, _READS_ONLY, True)
    return endpoint


def _writes(method: str, endpoint: Callable[..., Any]) -> bool:
    return method not in _READ_METHODS and not getattr(endpoint, _READS_ONLY, False)


def get_settings_dep(request: Request) -> Settings:
    return components_of(request.app).get(Settings)


def get_database(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


@asynccontextmanager
async def request_session(request: Request, *, writes: bool) -> AsyncIterator[AsyncSession]:
    """The request's session for the block (what :class:`SessionRoute` runs a request in; the
    tests drive it directly): committed at the end if it may write or holds a change, closed,
    rolled back and closed if the block raises."""
    await rls.enter(None, None)  # no scope until authentication enters the caller's
    session = get_database(request).sessionmaker(write=writes)()
    request.state.db_session = session
    try:
        yield session
        if writes or session.new or session.dirty or session.deleted:
            await session.commit()
        # A read session's statements committed on their own (autocommit; no BEGIN on SQLite):
        # with no pending change, its commit would send nothing, so closing it is the whole
        # exit (one greenlet hop, not two), and a session that never began a transaction nor
        # holds an object (every read was a plain one, hub.core.plainreads) has nothing to
        # close. Closed in this task: what ``async with`` adds is a task of its own for the
        # close, so that a cancellation cannot abandon a connection mid-way; here that path is
        # the one below, taken by anything raised meanwhile.
        if session.in_transaction() or session.identity_map or session.deleted:
            await session.close()
    except BaseException:
        await session.__aexit__(None, None, None)  # rolled back and closed, even if cancelled
        raise


_ANSWER_HEADERS = "hub.answer_headers"  # a key of the request's ASGI scope


def answer_with(request: Request, headers: Mapping[str, str]) -> None:
    """Headers every answer to ``request`` carries, set by a dependency (the rate-limit fields)."""
    request.scope[_ANSWER_HEADERS] = headers


def carry_headers(request: Request, response: Response) -> Response:
    """``response`` with the headers :func:`answer_with` gave the request. FastAPI merges a
    dependency's ``Response`` into the answer it builds from a returned value, but not into a
    ``Response`` the endpoint built itself (a 204, a bundle, an export): those lost them."""
    headers: Mapping[str, str] | None = request.scope.get(_ANSWER_HEADERS)
    if headers:
        for name, value in headers.items():
            if name not in response.headers:
                response.headers[name] = value
    return response


class SessionRoute(ShapedRoute):
    """A route whose requests run in :func:`request_session`: the session is open while
    FastAPI solves the dependencies and runs the endpoint, and ended once the response is
    built, before it is sent (see the module docstring). Its matching is a
    :class:`~hub.core.route_shape.ShapedRoute`'s; the plain dependencies at the head of its
    list are solved ahead of FastAPI's solver (:mod:`hub.core.presolve`). A JSON body that is
    not UTF-8 sent as it is, is refused first (:mod:`hub.core.body_encoding`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        app = self._session_handler()
        body = self.body_field
        if body is None or isinstance(body.field_info, params.Form):
            return app

        async def decodable(request: Request) -> Response:
            await refuse_undecodable(request)  # a JSON body is UTF-8, sent as it is
            return await app(request)

        return decodable

    def _session_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        endpoint = self.endpoint
        ahead = presolve.plan(self.dependant, self.param_convertors)
        if ahead is None:

            async def app(request: Request) -> Response:
                async with request_session(request, writes=_writes(request.method, endpoint)):
                    return carry_headers(request, await handler(request))

            return app
        whole, self.dependant = self.dependant, ahead.dependant
        try:  # FastAPI's handler of the dependencies left to it (see hub.core.presolve)
            rest = super().get_route_handler()
        finally:
            self.dependant = whole  # what the OpenAPI schema and everything else read
        provider = self.dependency_overrides_provider

        async def solved_ahead(request: Request) -> Response:
            async with request_session(request, writes=_writes(request.method, endpoint)):
                if provider is not None and provider.dependency_overrides:
                    return carry_headers(request, await handler(request))
                await ahead.solve(request)
                return carry_headers(request, await rest(request))

        return solved_ahead


def session_of(request: Request) -> AsyncSession:
    """The request's session (a :class:`SessionRoute`'s), for code that has the request: the
    same instance ``SessionDep`` gives, without a dependency for FastAPI to solve."""
    session: AsyncSession | None = getattr(request.state, "db_session", None)
    if session is None:
        raise RuntimeError(f"{request.url.path}: a route with a session is a SessionRoute")
    return session


# The dependencies are ``async`` although they await nothing: FastAPI runs a plain ``def``
# dependency in its thread pool, a round trip between threads on every request.
async def _settings(request: Request) -> Settings:
    return get_settings_dep(request)


async def _database(request: Request) -> Database:
    return get_database(request)


SettingsDep = Annotated[Settings, Depends(_settings)]
DatabaseDep = Annotated[Database, Depends(_database)]


async def _session(request: Request) -> AsyncSession:
    return session_of(request)


SessionDep = Annotated[AsyncSession, Depends(_session)]
