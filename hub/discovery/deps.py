"""The discovery context as a FastAPI dependency (used by discovery, servers and catalogs)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from hub.discovery.service import DiscoveryContext

__all__ = ["DiscoveryContextDep"]


def discovery_context(request: Request) -> DiscoveryContext:
    ctx: DiscoveryContext = request.app.state.discovery_context
    return ctx


DiscoveryContextDep = Annotated[DiscoveryContext, Depends(discovery_context)]
