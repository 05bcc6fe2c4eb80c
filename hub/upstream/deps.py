"""The upstream context as a FastAPI dependency (discovery, servers, catalogs)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.core.components import component
from hub.upstream.context import UpstreamContext

__all__ = ["UpstreamDep"]

UpstreamDep = Annotated[UpstreamContext, Depends(component(UpstreamContext))]
