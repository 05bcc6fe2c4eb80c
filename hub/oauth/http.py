"""Every request of the OAuth flow, through the pinned fetcher (DESIGN §6, §9).

Each request is its own egress operation **pinned to the origin of its own URL** (the protected
resource metadata, each authorization server document, the registration and token endpoints
may all live on different origins; a credential is never involved: the fetcher's bearer is
unused, client authentication is the operation's ``basic`` or form fields). Redirects are never
followed, bodies are capped, and the whole flow step shares one deadline (:class:`FlowClock`):
each operation gets what is left of it, so a slow authorization server cannot stretch a step
past ``HUB_DISCOVERY_TIMEOUT_S``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from hub.egress import (
    EgressConfig,
    EgressResponse,
    Fetcher,
    InvalidJson,
    RedirectRefused,
    UrlRejected,
    validate_url,
)
from hub.oauth.exceptions import failure

__all__ = ["FlowClock", "checked_url", "get_document", "post"]

MAX_URL = 2048  # what the OAuth columns hold
FORM = "application/x-www-form-urlencoded"


class FlowClock:
    """One deadline for a whole flow step (every request in it)."""

    def __init__(self, deadline_s: float) -> None:
        self._deadline = asyncio.get_running_loop().time() + deadline_s

    def remaining(self) -> float:
        left = self._deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise failure("timeout")
        return left


def checked_url(url: object, egress: EgressConfig, reason: str) -> str:
    """``url`` normalised by the egress URL rules (absolute https, or http to loopback when
    allowed; no userinfo, no fragment); anything else is the flow's failure ``reason``."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise failure(reason)
    try:
        return validate_url(url, egress)
    except UrlRejected:
        pass
    raise failure(reason)


async def get_document(
    fetcher: Fetcher, url: str, *, clock: FlowClock, scope: str
) -> dict[str, Any] | None:
    """GET a JSON metadata document: the object, or ``None`` when this URL has none (any
    non-200 status, a redirect, a body that is not a JSON object). Other egress failures
    (timeouts, refused destinations, caps) propagate: they end the discovery."""
    try:
        async with fetcher.operation(pin=url, deadline_s=clock.remaining(), scope=scope) as op:
            response = await op.request("GET", url, headers={"accept": "application/json"})
    except RedirectRefused:
        return None
    if response.status_code != 200:
        return None
    try:
        document = response.json()
    except InvalidJson:
        return None
    return document if isinstance(document, dict) else None


async def post(
    fetcher: Fetcher,
    url: str,
    *,
    clock: FlowClock | None = None,
    deadline_s: float | None = None,
    scope: str | None,
    form: Sequence[tuple[str, str]] | str | None = None,
    json: Mapping[str, Any] | None = None,
    basic: tuple[str, str] | None = None,
) -> EgressResponse:
    """POST a form (token requests) or JSON (registration) to ``url``, pinned to its origin."""
    budget = clock.remaining() if clock is not None else deadline_s
    if budget is None:
        raise ValueError("a deadline is needed")
    headers = {"accept": "application/json"}
    content: bytes | None = None
    if form is not None:
        body = form if isinstance(form, str) else urlencode(list(form))
        content = body.encode()
        headers["content-type"] = FORM
    async with fetcher.operation(pin=url, deadline_s=budget, scope=scope, basic=basic) as op:
        return await op.request("POST", url, json=json, content=content, headers=headers)
