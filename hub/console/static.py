"""The console's vendored assets: htmx (the ``htmx.org`` npm package's ``dist/htmx.min.js``,
0BSD), the stylesheet and the icon, from a fixed list (no path from the request reaches the file
system)."""

from __future__ import annotations

from importlib.resources import files

from starlette.responses import Response

from hub.console.routing import console_router
from hub.console.security import secure_headers
from hub.core.errors import NotFound

__all__ = ["router"]

router = console_router("/static")

_TYPES = {
    "htmx.min.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",  # linked by every page, so browsers ask no /favicon.ico
}
_CACHE: dict[str, bytes] = {}


def _asset(name: str) -> bytes:
    if name not in _CACHE:
        _CACHE[name] = (files("hub.console") / "static" / name).read_bytes()
    return _CACHE[name]


@router.get("/{name}", name="console.static")
async def static_asset(name: str) -> Response:
    if name not in _TYPES:
        raise NotFound()
    response = Response(_asset(name), media_type=_TYPES[name])
    response.headers["cache-control"] = "public, max-age=3600"
    return secure_headers(response, cacheable=True)
