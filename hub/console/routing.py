"""The console's router factory: HTML routes, out of the OpenAPI schema."""

from __future__ import annotations

from fastapi import APIRouter

from hub.console.web import ConsoleRoute

__all__ = ["console_router"]


def console_router(prefix: str = "") -> APIRouter:
    return APIRouter(prefix=f"/console{prefix}", route_class=ConsoleRoute, include_in_schema=False)
