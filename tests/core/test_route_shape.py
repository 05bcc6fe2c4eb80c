"""A shaped route matches exactly what its own matching matches (the shape only skips work).

Every route of the app is tried against paths made from every route template (its parameters
filled with values that look like ids, handles, versions and the literals other routes use),
their variants (a trailing slash, a segment more or fewer, an empty parameter) and a few
oddities, with every method: the shaped answer (match kind and parameters) equals the one
Starlette's own matching gives."""

from __future__ import annotations

import itertools
import re

from fastapi.routing import APIRoute

from hub.app import create_app
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
