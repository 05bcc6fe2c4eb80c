"""The route table looked up by a path's shape instead of tried in order, for the match itself.

Starlette tries a request's path against the app's routes in order until one matches in full.
Even with :class:`~hub.core.route_shape.ShapedRoute` refusing another shape's path in a few
comparisons, a route near the end of the table paid for dozens of refusals: about 30 µs of an
authenticated ``GET …/servers/{handle}`` (the 42nd of 100 routes), an eighth of the app's own
CPU per request (measured in process, issue 13).

:class:`RouteIndex` is the table's first route. It looks the path's segments up in an index of
the shaped routes (by the number of segments, then by the literal segments at their places),
then asks the few candidates found, with the shape-less routes among them, **in table order**,
for their own match: the first full match it finds is the one the ordered scan would have found
(every route it skipped could not match: its shape differs), so it is the one handled. When no
candidate matches in full (a 404, a 405) it answers "no match" and
the router goes on with its own ordered scan, as before: those answers are the router's, never
this index's.

Why by hand: Starlette's and FastAPI's routers only scan in order (FastAPI's ``APIRouter.app``
holds the semantics of partial matches, redirects and low-priority routes), and no maintained
router library plugs into them without replacing the app's router.

The index is built at the first request, and again whenever the table changed since (routes
added after the app was built, as tests do). Not indexed: a request under a ``root_path``, and
a websocket (answered by the ordered scan).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send

from hub.core.route_shape import ShapedRoute, path_segments

__all__ = ["RouteIndex", "install_route_index"]

#: the scope key under which the index leaves the route it chose for :meth:`RouteIndex.handle`
_CHOSEN = "hub.route_chosen"

#: the scope key of a search made ahead of the router (:meth:`RouteIndex.remember`)
_FOUND = "hub.route_found"

#: the literal segments of a group's positions, from a path's segments
Getter = Callable[[Sequence[str]], Any]


@dataclass
class _Group:
    """The shaped routes of one segment count with literals at the same positions."""

    literals_at: Getter
    by_literals: dict[Any, list[int]] = field(default_factory=dict)


@dataclass
class _Table:
    """Every route's place in the table, by what a path must hold for it to match."""

    fingerprint: tuple[int, int, int]
    routes: list[BaseRoute]
    unshaped: list[int]  # tried whatever the path
    groups: dict[int, list[_Group]]  # by the number of "/" in a matching path

    def candidates(self, parts: list[str]) -> list[BaseRoute]:
        """The routes that may match a path of these segments, in table order."""
        found: list[int] = []
        sources = 0
        for group in self.groups.get(len(parts) - 1, ()):
            hit = group.by_literals.get(group.literals_at(parts))
            if hit is not None:
                found += hit
                sources += 1
        if self.unshaped:
            found += self.unshaped
            sources += 1
        if sources > 1:
            found.sort()
        routes = self.routes
        return [routes[i] for i in found]


def _fingerprint(routes: list[BaseRoute]) -> tuple[int, int, int]:
    """What changes when a route is added to or removed from either end of the table (the
    ways the app's table is ever changed: it is appended to, and this index put first)."""
    return len(routes), id(routes[0]), id(routes[-1])


def _build(routes: list[BaseRoute], index: RouteIndex) -> _Table:
    unshaped: list[int] = []
    groups: dict[int, dict[tuple[int, ...], _Group]] = {}
    for ordinal, route in enumerate(routes):
        if route is index:
            continue
        shape = route.shape if isinstance(route, ShapedRoute) else None
        if shape is None:
            unshaped.append(ordinal)
            continue
        slashes, literals = shape
        positions = tuple(i for i, _ in literals)
        group = groups.setdefault(slashes, {}).get(positions)
        if group is None:
            group = groups[slashes][positions] = _Group(_getter(positions))
        template = [""] * (slashes + 1)
        for i, literal in literals:
            template[i] = literal
        group.by_literals.setdefault(group.literals_at(template), []).append(ordinal)
    return _Table(
        fingerprint=_fingerprint(routes),
        routes=list(routes),
        unshaped=unshaped,
        groups={n: list(by_positions.values()) for n, by_positions in groups.items()},
    )


def _getter(positions: tuple[int, ...]) -> Getter:
    if not positions:  # a template of parameters only: every path of its count is a candidate
        return lambda _parts: ()
    return operator.itemgetter(*positions)


class RouteIndex(BaseRoute):
    """The first route of the app's table: the full match the ordered scan would find, found by
    index (see the module docstring). It has no path, name or methods of its own, so what
    lists the app's routes (the OpenAPI schema, the route matrix) passes over it."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self._routes = routes  # the app's own list, read at each request
        self._table: _Table | None = None

    def _current(self) -> _Table:
        table = self._table
        if table is None or table.fingerprint != _fingerprint(self._routes):
            table = self._table = _build(self._routes, self)
        return table

    def find(self, scope: Scope) -> tuple[BaseRoute, Scope] | None:
        """The route the ordered scan would handle ``scope`` with, and its child scope; None
        when that is the scan's to answer (no full match, a websocket, a ``root_path``)."""
        if scope["type"] != "http" or scope.get("root_path"):
            return None
        for route in self._current().candidates(path_segments(scope)):
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                return route, child_scope
        return None

    def remember(self, scope: Scope, found: tuple[BaseRoute, Scope] | None) -> None:
        """Keep what :meth:`find` gave for ``scope`` (found ahead of the router, by
        :class:`~hub.core.fastlane.FastLanes`), so the router's first look does not search again."""
        scope[_FOUND] = (scope["path"], scope["method"], found)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        ahead = scope.pop(_FOUND, None)  # popped: read once, by the router's first look
        if ahead is not None and ahead[:2] == (scope["path"], scope["method"]):
            found = ahead[2]
        else:
            found = self.find(scope)
        if found is None:
            return Match.NONE, {}  # the router's ordered scan answers it
        route, child_scope = found
        return Match.FULL, {**child_scope, _CHOSEN: route}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        route: BaseRoute = scope.pop(_CHOSEN)
        await route.handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)


def install_route_index(app: FastAPI) -> None:
    """Put a :class:`RouteIndex` first in ``app``'s table (once the app's routes are added)."""
    routes = app.router.routes
    routes.insert(0, RouteIndex(routes))
