"""Driving the hub's OAuth flow headlessly, as a consenting user's browser would.

``authorize_headlessly`` GETs the authorization URL through the app's own egress fetcher with
redirects refused-but-readable (``accept_redirect``), reads the authorization server's 302
``Location`` and hands its query to the hub's ``GET /oauth/callback``. The conformance adapter
(:mod:`tests.oauth.conformance_auth_adapter`) and the end-to-end tests share it.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

import httpx2
from fastapi import FastAPI

from hub.core.components import components_of
from hub.egress import Fetcher

__all__ = ["Connected", "authorize_headlessly", "connect", "redirect_query"]


async def redirect_query(fetcher: Fetcher, authorization_url: str) -> dict[str, str]:
    """The query the authorization server redirects back with (its 302 is never followed)."""
    async with fetcher.operation(pin=authorization_url, deadline_s=10) as op:
        response = await op.request("GET", authorization_url, accept_redirect=True)
    assert 300 <= response.status_code < 400, response.status_code
    location = response.headers["location"]
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


@dataclass
class Connected:
    created: httpx2.Response
    callback: httpx2.Response | None
    status: dict[str, Any] | None

    @property
    def credential_id(self) -> str | None:
        return None if self.status is None else self.status.get("credential_id")


async def authorize_headlessly(
    app: FastAPI, client: httpx2.AsyncClient, authorization_url: str
) -> httpx2.Response:
    query = await redirect_query(components_of(app).get(Fetcher), authorization_url)
    return await client.get("/oauth/callback", params=query)


async def connect(
    app: FastAPI,
    client: httpx2.AsyncClient,
    tenant_url: str,
    headers: dict[str, str],
    body: dict[str, Any],
) -> Connected:
    """Start an authorization, consent headlessly, and read its final status."""
    created = await client.post(f"{tenant_url}/oauth/authorizations", json=body, headers=headers)
    if created.status_code != 201:
        return Connected(created, None, None)
    data = created.json()["data"]
    callback = await authorize_headlessly(app, client, data["authorization_url"])
    status = await client.get(f"{tenant_url}/oauth/authorizations/{data['id']}", headers=headers)
    return Connected(created, callback, status.json()["data"])
