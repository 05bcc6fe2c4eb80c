"""Fast lanes: a route whose requests are served ahead of FastAPI's layers, for the hottest path.

Between the hub's edge (:class:`~hub.core.middleware.RequestEdgeMiddleware`) and a route's
endpoint, every request passes Starlette's exception middleware, FastAPI's exit-stack
middleware, the router, the route's request-response wrapper, FastAPI's request handler and its
dependency solver, each a call and most a wrapper or a context of their own. For a REST route
those layers do real work (dependencies, body and response models). For the agents' MCP
endpoint they do none: it takes the request and two path strings and returns a ``Response``.
Measured on ``tools/call`` through the endpoint (PostgreSQL, allow, one SDK client; alternating
runs): serving it from the edge saves about 0.2 ms of the hub's CPU per call, 8% (issue 14).

:class:`FastLanes` sits just inside the edge (so request ids, metrics, the body limit and the
last resort still hold) and asks the route index (:mod:`hub.core.route_index`) for the route the
router would choose. When that route is a lane, it is called here as the router would have
called it, with the same scope (``route``, ``endpoint``, ``path_params``); an exception from the
endpoint goes to the app's own exception handler for it, as Starlette's exception middleware
would send it, and anything without one goes on to the edge's last resort, as before. Every
other request, and a lane's request the index leaves to the router (a 405, a ``root_path``),
goes on to FastAPI unchanged, with the index's answer kept in its scope for the
router's first look (:meth:`~hub.core.route_index.RouteIndex.remember`): one search, not two.

A lane must be a route FastAPI would call with nothing to solve: ``str`` path parameters and the
request only (no dependencies, query, header, cookie or body parameters), returning a
``Response``. :func:`install_fast_lanes` refuses any other route.

Why by hand: no router plugs into Starlette or FastAPI to skip their layers for one route while
keeping that route in the app's table (its OpenAPI operation, its route template in metrics).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: TID251
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hub.core.route_index import RouteIndex
from hub.core.route_shape import ShapedRoute, fits, path_segments

__all__ = ["LANE_SCOPE_KEY", "FastLanes", "install_fast_lanes"]

#: set in a request's scope when a fast lane served it (read by tests)
LANE_SCOPE_KEY = "hub.fast_lane"

Handler = Callable[[Request, Exception], Any]


class FastLanes:
    """ASGI layer serving the lane routes' requests itself (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, fastapi: FastAPI, index: RouteIndex, lanes: Collection[APIRoute]
    ) -> None:
        self.app = app
        self._fastapi = fastapi
        self._index = index
        self.routes = tuple(lanes)
        self._lanes = {id(route): route.dependant.request_param_name for route in lanes}
        self._methods = frozenset(m for route in lanes for m in route.methods or ())
        self._shapes = [route.shape if isinstance(route, ShapedRoute) else None for route in lanes]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in self._methods and self._may_fit(scope):
            found = self._index.find(scope)
            if found is not None and id(found[0]) in self._lanes:
                await self._serve(found[1], scope, receive, send)
                return
            self._index.remember(scope, found)  # the router's look needs no second search
        await self.app(scope, receive, send)

    def _may_fit(self, scope: Scope) -> bool:
        """Whether a lane's shape admits the path (the rest never asks the index here)."""
        parts = path_segments(scope)
        return any(shape is None or fits(shape, parts) for shape in self._shapes)

    async def _serve(self, child: Scope, scope: Scope, receive: Receive, send: Send) -> None:
        scope.update(child)
        scope[LANE_SCOPE_KEY] = True
        request = Request(scope, receive)
        endpoint: Callable[..., Awaitable[Response]] = child["endpoint"]
        arguments = {self._lanes[id(child["route"])]: request, **child["path_params"]}
        try:
            response = await endpoint(**arguments)
        except Exception as error:
            handler = _handler_for(self._fastapi.exception_handlers, error)
            if handler is None:
                raise  # the edge's last resort, as through the router
            response = handler(request, error)
            if inspect.isawaitable(response):
                response = await response
        await response(scope, receive, send)


def _handler_for(handlers: dict[Any, Handler], error: Exception) -> Handler | None:
    """The app's handler for ``error``, found as Starlette's exception middleware finds it: an
    HTTP exception's status first, then the nearest class in the exception's MRO."""
    if isinstance(error, StarletteHTTPException) and error.status_code != 500:
        by_status = handlers.get(error.status_code)
        if by_status is not None:
            return by_status
    for cls in type(error).__mro__:
        if cls is not Exception and cls in handlers:  # 500 and Exception: the last resort's
            return handlers[cls]
    return None


def _check_lane(route: APIRoute) -> None:
    dependant = route.dependant
    extra = (
        dependant.dependencies
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
    )
    plain = all(field.field_info.annotation is str for field in dependant.path_params)
    if extra or not plain or dependant.request_param_name is None:
        raise ValueError(
            f"route {route.name!r} cannot be a fast lane: it must take the request and str "
            "path parameters only"
        )
    if not inspect.iscoroutinefunction(route.endpoint):
        raise ValueError(f"route {route.name!r} cannot be a fast lane: its endpoint is not async")


def install_fast_lanes(app: FastAPI, names: Collection[str]) -> None:
    """Serve the routes named ``names`` from a :class:`FastLanes` layer (added now, so it sits
    inside any middleware added after it). Call after :func:`~hub.core.route_index.
    install_route_index`; a name that is not an eligible route of ``app`` is a ValueError."""
    index = app.router.routes[0]
    if not isinstance(index, RouteIndex):
        raise ValueError("install the route index first")
    lanes = [r for r in app.router.routes if isinstance(r, APIRoute) and r.name in names]
    missing = set(names) - {r.name for r in lanes}
    if missing:
        raise ValueError(f"no such route: {', '.join(sorted(missing))}")
    for route in lanes:
        _check_lane(route)
    app.add_middleware(FastLanes, fastapi=app, index=index, lanes=lanes)
