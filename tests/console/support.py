"""A console user driven by HTTP (no browser): sign in with a key, keep the cookies, post forms
with the page's CSRF token and a same-origin ``Origin`` as a browser would."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx2

from hub.core import clock
from hub.core.db import Database
from hub.models import Approval
from tests.support.factories import make_catalog, make_server
from tests.support.stories import TenantAdmin

__all__ = ["ConsoleUser", "allow", "csrf_in", "seed_approval", "seed_catalogs"]

_CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


def csrf_in(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, html[:2000]
    return found.group(1)


class ConsoleUser:
    """One browser's worth of console state on ``client`` (its own cookie jar)."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.http = client
        self.origin = str(client.base_url).rstrip("/")
        self.csrf = ""

    async def sign_in(self, key: str) -> httpx2.Response:
        form = await self.http.get("/console/login")
        assert form.status_code == 200, form.text
        response = await self.http.post(
            "/console/login",
            data={"api_key": key, "csrf": csrf_in(form.text), "next": "/console"},
            headers={"origin": self.origin},
        )
        if response.status_code == 303:
            await self.refresh_csrf()
        return response

    async def refresh_csrf(self) -> None:
        """The signed-in session's CSRF token, read from a page's sign-out form."""
        home = await self.http.get("/console", follow_redirects=True)
        self.csrf = csrf_in(home.text)

    async def get(self, path: str, **kwargs: Any) -> httpx2.Response:
        return await self.http.get(path, **kwargs)

    async def post(
        self, path: str, data: dict[str, str] | None = None, *, csrf: bool = True, **headers: str
    ) -> httpx2.Response:
        fields = dict(data or {})
        if csrf:
            fields["csrf"] = self.csrf
        sent = {"origin": self.origin, **headers}
        return await self.http.post(path, data=fields, headers=sent)


async def seed_catalogs(
    db: Database, tenant_id: uuid.UUID, handle: str, versions: list[list[dict[str, object]]]
) -> uuid.UUID:
    server_id = await make_server(db, tenant_id, handle)
    for number, tools in enumerate(versions, start=1):
        await make_catalog(db, tenant_id, server_id, tools, version=number)
    return server_id


async def seed_approval(
    db: Database,
    tenant_id: uuid.UUID,
    agent_id: uuid.UUID,
    deployment_id: uuid.UUID,
    *,
    arguments: dict[str, Any] | None,
    handle: str = "peer",
    tool: str = "delete_record",
) -> uuid.UUID:
    """A pending approval as an ``ask`` call leaves it, its arguments sealed under the test
    keyring (``arguments=None``: sealed under a key the hub's keyring does not hold)."""
    import base64
    import json
    from datetime import timedelta

    from hub.approvals.service import approval_aad
    from hub.core.crypto import Keyring
    from tests.conftest import make_settings

    if arguments is None:
        other = "k9:" + base64.b64encode(b"z" * 32).decode()
        keyring = Keyring.from_settings(make_settings(encryption_keys=other, active_key_id="k9"))
    else:
        keyring = Keyring.from_settings(make_settings())
    approval_id = uuid.uuid4()
    sealed = keyring.encrypt(json.dumps(arguments or {}), approval_aad(tenant_id, approval_id))
    now = clock.now()
    async with db.session() as session:
        session.add(
            Approval(
                id=approval_id,
                tenant_id=tenant_id,
                deployment_id=deployment_id,
                agent_id=agent_id,
                grant_key=f"tool:{handle}.{tool}",
                handle=handle,
                tool_name=tool,
                wire_name=f"{handle}__{tool}",
                arguments_key_id=sealed.key_id,
                arguments_nonce=sealed.nonce,
                arguments_ciphertext=sealed.ciphertext,
                arguments_sha256="a" * 64,
                tool_sha256="b" * 64,
                catalog_version=1,
                status="pending",
                requested_at=now,
                expires_at=now + timedelta(minutes=15),
            )
        )
    return approval_id


async def allow(
    client: httpx2.AsyncClient,
    setup: TenantAdmin,
    principal_id: uuid.UUID,
    resource: str,
    *actions: str,
) -> None:
    """Grant ``principal_id`` ``allow`` on ``resource`` for each of ``actions``, through the API
    as the tenant admin of ``setup``."""
    for action in actions:
        granted = await client.post(
            setup.url("grants"),
            json={
                "principal_id": str(principal_id),
                "resource": resource,
                "action": action,
                "effect": "allow",
            },
            headers=setup.admin.headers,
        )
        assert granted.status_code == 201, granted.text
