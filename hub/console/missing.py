"""Any other path under ``/console``: the console's own 404 page (registered last)."""

from __future__ import annotations

from starlette.responses import Response

from hub.console.routing import console_router
from hub.core.errors import NotFound

__all__ = ["router"]

router = console_router()


@router.get("/{rest:path}", name="console.not_found")
async def not_found(rest: str) -> Response:
    raise NotFound()
