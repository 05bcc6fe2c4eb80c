"""``/docs`` and ``/redoc`` work with no network: every asset comes from the hub itself."""

from __future__ import annotations

import re

import httpx2
import pytest

_REFERENCE = re.compile(r"""(?:src|href|spec-url)=["']([^"']+)["']|url:\s*'([^']+)'""")


def _references(html: str) -> list[str]:
    return [a or b for a, b in _REFERENCE.findall(html)]


@pytest.mark.parametrize(
    ("page", "assets"),
    [
        ("/docs", {"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"}),
        ("/redoc", {"/docs/assets/redoc.standalone.js"}),
    ],
)
async def test_the_page_references_only_the_hubs_own_urls(
    client: httpx2.AsyncClient, page: str, assets: set[str]
) -> None:
    response = await client.get(page)
    assert response.status_code == 200
    html = response.text
    assert "http://" not in html
    assert "https://" not in html  # no CDN, no fonts, no validator badge
    references = _references(html)
    assert assets <= set(references)
    assert "/openapi.json" in references
    assert all(ref.startswith("/") and not ref.startswith("//") for ref in references), references
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp  # a browser may load nothing from elsewhere
    for ref in references:
        got = await client.get(ref)
        assert got.status_code == 200, ref
        assert got.content, ref


@pytest.mark.parametrize(
    ("asset", "media_type"),
    [
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
        ("redoc.standalone.js", "text/javascript"),
        ("favicon.png", "image/png"),
    ],
)
async def test_assets_are_served_from_the_vendored_package(
    client: httpx2.AsyncClient, asset: str, media_type: str
) -> None:
    response = await client.get(f"/docs/assets/{asset}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media_type)
    assert len(response.content) > 1000


async def test_only_the_listed_assets_are_served(client: httpx2.AsyncClient) -> None:
    for name in ["nope.js", "..%2Fpyproject.toml", "%2e%2e"]:
        response = await client.get(f"/docs/assets/{name}")
        assert response.status_code == 404, name
