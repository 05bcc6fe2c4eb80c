"""Swagger UI (``/docs``) and ReDoc (``/redoc``) from vendored assets, never a CDN.

FastAPI's pages load their JavaScript and CSS from a CDN, so they are blank offline (and on any
network that blocks it). The hub serves the same pages with every asset from its own URLs: the
Swagger UI bundle, its CSS and the ReDoc standalone bundle come from the ``fastapi-offline``
package (which vendors them; only its files are used, not its app class) and are served from a
fixed allow-list under ``/docs/assets/``. The pages' ``Content-Security-Policy`` lets a browser
load nothing from any other origin, so a page that works at all works with no network.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response

from hub.core.errors import NotFound

__all__ = ["ASSETS", "DOCS_CSP", "install_docs"]

ASSET_PREFIX = "/docs/assets"
#: name in the URL → (file in the vendored package, media type)
ASSETS: dict[str, tuple[str, str]] = {
    "swagger-ui-bundle.js": ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    "swagger-ui.css": ("swagger-ui.css", "text/css; charset=utf-8"),
    "redoc.standalone.js": ("redoc.standalone.js", "text/javascript; charset=utf-8"),
    "favicon.png": ("favicon.png", "image/png"),
}
#: Same origin only. ``'unsafe-inline'``: FastAPI's Swagger page starts the bundle with an
#: inline script, and both UIs inject inline styles; ``blob:`` workers are ReDoc's search.
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_HEADERS = {"content-security-policy": DOCS_CSP, "x-content-type-options": "nosniff"}


@cache
def _asset(name: str) -> bytes:
    filename, _ = ASSETS[name]
    return files("fastapi_offline").joinpath("static", filename).read_bytes()


def _with_headers(page: HTMLResponse) -> HTMLResponse:
    page.headers.update(_HEADERS)
    return page


def install_docs(app: FastAPI, *, openapi_url: str = "/openapi.json") -> None:
    """Serve ``/docs``, its OAuth2 redirect page, ``/redoc`` and their assets."""
    title = app.title
    oauth2_redirect = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False, name="swagger_ui_html")
    async def swagger_ui_html() -> HTMLResponse:
        return _with_headers(
            get_swagger_ui_html(
                openapi_url=openapi_url,
                title=f"{title} - Swagger UI",
                oauth2_redirect_url=oauth2_redirect,
                swagger_js_url=f"{ASSET_PREFIX}/swagger-ui-bundle.js",
                swagger_css_url=f"{ASSET_PREFIX}/swagger-ui.css",
                swagger_favicon_url=f"{ASSET_PREFIX}/favicon.png",
                # no spec validator badge: it would send the document to validator.swagger.io
                swagger_ui_parameters={"validatorUrl": None},
            )
        )

    @app.get(oauth2_redirect, include_in_schema=False, name="swagger_ui_redirect")
    async def swagger_ui_redirect() -> HTMLResponse:
        return _with_headers(get_swagger_ui_oauth2_redirect_html())

    @app.get("/redoc", include_in_schema=False, name="redoc_html")
    async def redoc_html() -> HTMLResponse:
        return _with_headers(
            get_redoc_html(
                openapi_url=openapi_url,
                title=f"{title} - ReDoc",
                redoc_js_url=f"{ASSET_PREFIX}/redoc.standalone.js",
                redoc_favicon_url=f"{ASSET_PREFIX}/favicon.png",
                with_google_fonts=False,
            )
        )

    @app.get(ASSET_PREFIX + "/{name}", include_in_schema=False, name="docs_asset")
    async def docs_asset(name: str) -> Response:
        if name not in ASSETS:
            raise NotFound()
        return Response(
            _asset(name),
            media_type=ASSETS[name][1],
            headers={"cache-control": "public, max-age=86400", "x-content-type-options": "nosniff"},
        )
