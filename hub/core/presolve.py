"""A route's plain dependencies, solved before FastAPI's solver sees the rest of them.

FastAPI solves a route's dependency tree on every request with a generic walk: for each node it
recurses, looks four kinds of parameters up (path, query, header, cookie, each list empty or
not), computes the node's cache key (its OAuth scopes and whether it is a generator, through
``lru_cache`` lookups) and asks again whether its callable is a coroutine. That walk cost about
25 µs of an authenticated ``GET …/servers/{handle}`` in process (three dependencies) and 48 µs
of ``POST …/grants/check`` (five), a tenth and a fifth of the app's own CPU per request (issue
13): more than the database read.

A **plain** dependency is an ``async def`` function (no generator, no thread pool, no
concurrency limit, no security scheme or scopes) whose parameters are only the request, the
response, plain ``str`` path parameters of the route (no constraint: they cannot fail
validation), and plain dependencies. :func:`plan` takes the longest run of plain dependencies
at the head of a route's list (the router's ``rest_rate_limit`` first, then the endpoint's
parameters in order) and builds, for FastAPI, the same route without them; the route
(:class:`hub.core.deps.SessionRoute`) calls them with :meth:`Presolved.solve` and then FastAPI's
handler of the rest, whose endpoint receives their values. What FastAPI does with them is kept:

- the same calls, in the same order, each once per request (FastAPI's per-request cache: a
  node's own dependencies are solved before its cached value is used, as FastAPI does; a run
  sharing a dependency with the rest is shortened until it shares none, as two caches would
  call it twice);
- one response for every dependency: the one they were given is merged into FastAPI's before
  the endpoint runs (its headers first, as they were written first; its status unless one set
  later);
- everything FastAPI validates (the body, query parameters, the other dependencies) still
  FastAPI's.

One thing moves: a body that is not JSON is now refused after the caller is authenticated,
not before (a 401 for a request without a valid key, whatever its body). A route whose
dependencies are overridden (``app.dependency_overrides``) is served by FastAPI's own handler of
the whole tree.

Why by hand: FastAPI has no hook for its solver, and no library replaces it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.security.base import SecurityBase

__all__ = ["Presolved", "plan"]

#: the scope key carrying the solved values from :meth:`Presolved.solve` to the endpoint
_SOLVED = "hub.presolved"
#: parameter names under which FastAPI hands the endpoint's wrapper the request and response
_REQUEST = "_hub_presolve_request"
_RESPONSE = "_hub_presolve_response"


@dataclass(frozen=True, slots=True)
class _Node:
    """One plain dependency: how to call it."""

    call: Callable[..., Awaitable[Any]]
    name: str | None
    use_cache: bool
    subs: tuple[_Node, ...]
    request_names: tuple[str, ...]  # the request, as ``Request`` or ``HTTPConnection``
    response_name: str | None
    path_names: tuple[tuple[str, str], ...]  # (parameter, path parameter)

    def calls(self) -> Iterator[Callable[..., Any]]:
        yield self.call
        for sub in self.subs:
            yield from sub.calls()


async def _solve(node: _Node, request: Request, response: Response, cache: dict[Any, Any]) -> Any:
    """``node``'s value, as FastAPI's ``solve_dependencies`` computes a sub-dependency's."""
    kwargs: dict[str, Any] = {}
    for sub in node.subs:
        value = await _solve(sub, request, response, cache)
        if sub.name is not None:
            kwargs[sub.name] = value
    call = node.call
    if node.use_cache and call in cache:
        return cache[call]
    params = request.path_params
    for name, alias in node.path_names:
        kwargs[name] = params[alias]
    for name in node.request_names:
        kwargs[name] = request
    if node.response_name is not None:
        kwargs[node.response_name] = response
    solved = await call(**kwargs)
    cache.setdefault(call, solved)
    return solved


def _node(dependant: Dependant, path_params: Collection[str]) -> _Node | None:
    """``dependant``'s plan, or None when it is not plain (see the module docstring)."""
    call = dependant.call
    if (
        call is None
        or not inspect.iscoroutinefunction(call)
        or isinstance(call, SecurityBase)
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
        or dependant.websocket_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.own_oauth_scopes
        or getattr(dependant, "concurrency", None) is not None
    ):
        return None
    path_names = []
    for field in dependant.path_params:
        info = field.field_info
        if info.annotation is not str or info.metadata or field.alias not in path_params:
            return None
        path_names.append((field.name, field.alias))
    subs = []
    for sub in dependant.dependencies:
        node = _node(sub, path_params)
        if node is None:
            return None
        subs.append(node)
    request_names = tuple(
        n for n in (dependant.request_param_name, dependant.http_connection_param_name) if n
    )
    return _Node(
        call=call,
        name=dependant.name,
        use_cache=dependant.use_cache,
        subs=tuple(subs),
        request_names=request_names,
        response_name=dependant.response_param_name,
        path_names=tuple(path_names),
    )


def _calls(dependants: list[Dependant]) -> set[Callable[..., Any]]:
    found: set[Callable[..., Any]] = set()
    for dependant in dependants:
        if dependant.call is not None:
            found.add(dependant.call)
        found |= _calls(dependant.dependencies)
    return found


@dataclass(frozen=True)
class Presolved:
    """A route's head of plain dependencies and the dependant FastAPI solves for the rest."""

    nodes: tuple[_Node, ...]
    dependant: Dependant

    async def solve(self, request: Request) -> None:
        """Call the plain dependencies, in order, for the request's endpoint to receive."""
        response = Response()  # as FastAPI makes the one its dependencies share
        del response.headers["content-length"]
        response.status_code = None  # type: ignore[assignment]
        cache: dict[Any, Any] = {}
        values: dict[str, Any] = {}
        for node in self.nodes:
            value = await _solve(node, request, response, cache)
            if node.name is not None:
                values[node.name] = value
        request.scope[_SOLVED] = (values, response)


def plan(dependant: Dependant, path_params: Collection[str]) -> Presolved | None:
    """The plan of a route with ``dependant`` (its root) and these path parameters, or None when
    none of its dependencies can be solved ahead or its endpoint is not an ``async def``."""
    endpoint = dependant.call
    if endpoint is None or not inspect.iscoroutinefunction(endpoint):
        return None
    head: list[_Node] = []
    for sub in dependant.dependencies:
        node = _node(sub, path_params)
        if node is None:
            break
        head.append(node)
    while head:  # no dependency shared with the rest (two caches would call it twice)
        rest = dependant.dependencies[len(head) :]
        if not {c for n in head for c in n.calls()} & _calls(rest):
            break
        head.pop()
    if not head:
        return None
    return Presolved(tuple(head), _rest(dependant, endpoint, len(head)))


def _rest(dependant: Dependant, endpoint: Callable[..., Any], solved: int) -> Dependant:
    """``dependant`` without its first ``solved`` dependencies, its ``endpoint`` wrapped to take
    their values (and the request and response, under names of its own when it names none)."""
    request_name = dependant.request_param_name or _REQUEST
    response_name = dependant.response_param_name or _RESPONSE
    own_request = dependant.request_param_name is not None
    own_response = dependant.response_param_name is not None

    @functools.wraps(endpoint)
    async def call(**values: Any) -> Any:
        request: Request = values[request_name] if own_request else values.pop(request_name)
        response: Response = values[response_name] if own_response else values.pop(response_name)
        solved, theirs = request.scope.pop(_SOLVED)
        response.headers.raw[:0] = theirs.headers.raw  # written first, before the rest's
        status: int | None = response.status_code  # FastAPI's starts as None
        if status is None:
            response.status_code = theirs.status_code
        return await endpoint(**values, **solved)

    return dataclasses.replace(
        dependant,
        dependencies=dependant.dependencies[solved:],
        call=call,
        request_param_name=request_name,
        response_param_name=response_name,
    )
