"""The typed components of one hub replica, and the one dependency that reads them.

:class:`Components` holds one object per type (the keyring, the fetcher, the policy cache, each
domain's context…), built once per app by :mod:`hub.wiring` and kept on ``app.state``. A domain
reads its part with ``Annotated[X, Depends(component(X))]`` — typed, and without importing the
wiring that sits above every domain. Nothing else reads ``app.state``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, cast

from fastapi import FastAPI, Request

__all__ = ["Components", "component", "components_of"]

T = TypeVar("T")


class Components:
    """One instance per type; ``get(X)`` returns the ``X`` registered, or raises ``LookupError``."""

    def __init__(self, parts: Iterable[object] = ()) -> None:
        self._parts: dict[type[Any], object] = {}
        for part in parts:
            self.provide(type(part), part)

    def provide(self, kind: type[T], part: T) -> None:
        """Register ``part`` under ``kind`` (its own type, or a base or protocol it serves)."""
        if kind in self._parts:
            raise ValueError(f"a {kind.__name__} is registered already")
        self._parts[kind] = part

    def get(self, kind: type[T]) -> T:
        try:
            return cast(T, self._parts[kind])
        except KeyError:
            raise LookupError(f"no {kind.__name__} in this app's components") from None

    def __contains__(self, kind: type[Any]) -> bool:
        return kind in self._parts

    def __repr__(self) -> str:
        return f"<Components {sorted(k.__name__ for k in self._parts)}>"


def components_of(app: FastAPI) -> Components:
    parts: Components = app.state.components
    return parts


def component(kind: type[T]) -> Callable[[Request], Awaitable[T]]:
    """A FastAPI dependency returning the app's ``kind`` component.

    ``async`` although it awaits nothing: FastAPI runs a plain ``def`` dependency in its thread
    pool, a round trip between threads on every request for a dictionary lookup.
    """

    async def dependency(request: Request) -> T:
        return components_of(request.app).get(kind)

    dependency.__name__ = f"component_{kind.__name__}"
    return dependency
