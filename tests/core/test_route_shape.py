"""A shaped route matches exactly what its own matching matches (the shape only skips work),
and the route index finds the route the ordered scan would.

Every route of the app is tried against paths made from every route template (its parameters
filled with values that look like ids, handles, versions and the literals other routes use),
their variants (a trailing slash, a segment more or fewer, an empty parameter) and a few
oddities, with every method: the shaped answer (match kind and parameters) equals the one
Starlette's own matching gives."""

from __future__ import annotations

import itertools
import re

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from hub.app import create_app
from hub.core.route_index import RouteIndex
from hub.core.route_shape import ShapedRoute, path_shape
from tests.conftest import make_settings

_VALUES = (
    "0c7f6a8e-2b9d-4c1e-9f3a-5d6b7e8f9a0b",
    "linear",
    "check",
    "latest",
    "7",
    "decision",
    "mcp",
    "%2Fx",
)
_METHODS = ("GET", "POST", "PATCH", "DELETE")
_PARAM = re.compile(r"\{[^}]+\}")


def _paths(templates: list[str]) -> list[str]:
    paths: set[str] = {"/", "", "//", "/tenants//servers/x", "/tenants/x/servers/x/"}
    for template in templates:
        slots = len(_PARAM.findall(template))
        for values in itertools.islice(itertools.product(_VALUES, repeat=slots), 40):
            filled = template
            for value in values:
                filled = _PARAM.sub(value, filled, count=1)
            paths |= {filled, filled + "/", filled + "/extra", filled.rsplit("/", 1)[0]}
        paths.add(_PARAM.sub("", template))
    return sorted(paths)


def _scope(path: str, method: str) -> dict[str, object]:
    return {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}


def test_a_shaped_route_matches_what_its_own_matching_does() -> None:
    routes = [r for r in create_app(make_settings()).routes if isinstance(r, APIRoute)]
    shaped = [r for r in routes if isinstance(r, ShapedRoute)]
    assert len(shaped) > 60  # every REST, gateway, health and console route
    paths = _paths([r.path_format for r in routes])
    compared = rejected = 0
    for route in shaped:
        for path, method in itertools.product(paths, _METHODS):
            scope = _scope(path, method)
            assert route.matches(scope) == APIRoute.matches(route, dict(scope)), (route, path)
            compared += 1
            rejected += route.shape is not None and path.count("/") != route.shape[0]
    assert rejected > compared // 2  # the shape does skip most of the work


def test_a_path_parameter_has_no_shape() -> None:
    route = APIRoute("/files/{rest:path}", lambda: None)
    assert path_shape(route.path_format, route.param_convertors) is None
    assert path_shape("/tenants/{t}/servers/{handle}", {}) == (
        4,
        ((0, ""), (1, "tenants"), (3, "servers")),
    )


def _first_full(
    routes: list[BaseRoute], scope: dict[str, object]
) -> tuple[BaseRoute, Scope] | None:
    """What Starlette's ordered scan handles: the first route matching in full."""
    for route in routes:
        match, child_scope = route.matches(dict(scope))
        if match is Match.FULL:
            return route, child_scope
    return None


def test_the_index_finds_the_route_the_ordered_scan_finds() -> None:
    app = create_app(make_settings())
    index, *routes = app.router.routes
    assert isinstance(index, RouteIndex)  # the table's first route
    paths = _paths([r.path_format for r in routes if isinstance(r, APIRoute)])
    found = missed = 0
    for path, method in itertools.product(paths, _METHODS):
        scope = _scope(path, method)
        expected = _first_full(routes, scope)
        match, child_scope = index.matches(dict(scope))
        if expected is None:
            assert match is Match.NONE, (path, method)  # the router's own scan answers it
            missed += 1
            continue
        route, expected_scope = expected
        assert match is Match.FULL, (path, method, route)
        chosen = child_scope.pop("hub.route_chosen")
        assert chosen is route, (path, method, chosen, route)
        assert child_scope == expected_scope
        found += 1
    assert found > 500
    assert missed > 500


def test_the_index_follows_routes_added_after_its_first_request() -> None:
    app = create_app(make_settings())
    index = app.router.routes[0]
    assert isinstance(index, RouteIndex)
    probe = _scope("/_probe/7", "GET")
    assert index.matches(dict(probe))[0] is Match.NONE

    @app.get("/_probe/{n}")
    async def probe_route(n: int) -> dict[str, int]:
        return {"n": n}

    match, child_scope = index.matches(dict(probe))
    assert match is Match.FULL
    assert child_scope["hub.route_chosen"] is app.router.routes[-1]
    assert child_scope["path_params"] == {"n": "7"}


def test_the_index_leaves_websockets_and_root_paths_to_the_ordered_scan() -> None:
    index = create_app(make_settings()).router.routes[0]
    assert isinstance(index, RouteIndex)
    assert index.matches({**_scope("/healthz", "GET"), "type": "websocket"})[0] is Match.NONE
    assert index.matches({**_scope("/hub/healthz", "GET"), "root_path": "/hub"})[0] is Match.NONE
    assert index.matches(_scope("/healthz", "GET"))[0] is Match.FULL
