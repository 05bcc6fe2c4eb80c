"""Route matching that rejects another route's path by its shape before any regular expression.

Starlette tries a request against the app's routes in order, each with its own regular
expression (and FastAPI a scope lookup before it): a REST route near the end of the table paid
for dozens of failed matches on every request (measured: about a tenth of an authenticated GET's
own overhead, issue 13). A route's *shape* is what any path it matches must have: as many ``/``
as its template, and its literal segments (``tenants``, ``servers``…) at their places. A path of
another shape cannot match, so :class:`ShapedRoute` answers "no match" for it at once and leaves
every other case, and every matched path's parameters, to the route's own matching: a
necessary condition only, so the table's order and every route's matches are unchanged
(``tests/core/test_route_shape.py`` compares both over every route and path of the app).

Not shaped: a route with a ``path`` parameter (it spans segments), and a request under a
``root_path`` (the route path is then not ``scope["path"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi.routing import APIRoute
from starlette.convertors import Convertor, PathConvertor
from starlette.routing import Match
from starlette.types import Scope

__all__ = ["PathShape", "ShapedRoute", "fits", "path_segments", "path_shape"]

#: the number of ``/`` in a matching path, and the literal segments by position
PathShape = tuple[int, tuple[tuple[int, str], ...]]

#: the scope key of the request path and its segments (each route of the table reads them)
_SPLIT = "hub.path_segments"


def path_shape(path_format: str, convertors: Mapping[str, Convertor[Any]]) -> PathShape | None:
    """The shape of the paths ``path_format`` matches, or None when it has none to check."""
    if any(isinstance(c, PathConvertor) for c in convertors.values()):
        return None
    segments = path_format.split("/")
    literals = tuple((i, s) for i, s in enumerate(segments) if "{" not in s)
    return len(segments) - 1, literals


def path_segments(scope: Scope) -> list[str]:
    """The request path split at ``/``, once for the whole table (kept in the scope)."""
    path: str = scope["path"]
    split = scope.get(_SPLIT)
    if split is None or split[0] is not path:
        split = scope[_SPLIT] = (path, path.split("/"))
    parts: list[str] = split[1]
    return parts


def fits(shape: PathShape, parts: list[str]) -> bool:
    """Whether a path of these segments has ``shape`` (its ``/`` count and literals)."""
    slashes, literals = shape
    if len(parts) != slashes + 1:
        return False
    return all(parts[index] == literal for index, literal in literals)


class ShapedRoute(APIRoute):
    """An :class:`APIRoute` that refuses paths of another shape before its own matching."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.shape = path_shape(self.path_format, self.param_convertors)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        shape = self.shape
        if (
            shape is not None
            and scope["type"] == "http"
            and not scope.get("root_path")
            and not fits(shape, path_segments(scope))
        ):
            return Match.NONE, {}
        return super().matches(scope)
