"""No access token, refresh token or client secret ever leaves the hub's storage: not in a
response, a log line at DEBUG (httpx2/httpcore2 included), an audit row, an error's text, or any
column in the clear (SECURITY checklist 15, DESIGN §9)."""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterator
from datetime import timedelta

import httpx2
import pytest
from sqlalchemy import text, update

from hub.core import clock
from hub.core.components import components_of
from hub.models import Credential
from hub.upstream import InsufficientScope, UpstreamContext, call_tool, resolve_target
from tests.oauth.conftest import Hub, OAuthPeers, OAuthPeersStarter
from tests.support.databases import as_owner, owner_session
from tests.support.factories import scope_of
from tests.support.leaks import debug_everything, exposed_text


def _secrets(peers: OAuthPeers) -> set[str]:
    found = {*peers.auth.tokens, *peers.auth.refresh_tokens}
    found |= {c["secret"] for c in peers.auth.clients.values() if c.get("secret")}
    return found


def _forms(value: str) -> set[str]:
    raw = value.encode()
    return {
        value,
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }


async def _expire(hub: Hub, peers: OAuthPeers, credential_id: str) -> None:
    peers.auth.expire_all()
    async with owner_session(hub.db) as session:
        await session.execute(
            update(Credential)
            .where(Credential.id == uuid.UUID(credential_id))
            .values(expires_at=clock.now() - timedelta(seconds=1))
        )


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Everything at DEBUG, the HTTP libraries' loggers included (restored afterwards)."""
    debug_everything(caplog)
    loggers = [logging.getLogger(name) for name in ("httpx2", "httpcore2", "hub")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


async def test_tokens_and_client_secrets_never_leak(
    hub: Hub, oauth_peers: OAuthPeersStarter, debug_logs: pytest.LogCaptureFixture
) -> None:
    peers = await oauth_peers(
        guard={"call_scopes": ["mcp:write"]},
        tools=[{"name": "echo", "inputSchema": {"type": "object"}}],
    )
    seen: list[httpx2.Response] = []
    errors: list[BaseException] = []

    await hub.add_server("linear", peers.peer.url)
    done = await hub.connect({"server": "linear"})
    assert done.callback is not None
    assert done.credential_id is not None
    credential_id = done.credential_id
    seen += [done.created, done.callback]
    creds = hub.owner.url("credentials")
    seen.append(await hub.snapshot("linear"))
    await _expire(hub, peers, credential_id)  # a refresh, with rotation
    seen.append(await hub.snapshot("linear"))
    peers.auth.tokens.clear()  # a 401, one refresh, one retry
    seen.append(await hub.snapshot("linear"))
    ctx = components_of(hub.app).get(UpstreamContext)
    tenant = scope_of(hub.owner.tenant_id)
    async with owner_session(hub.db, write=False) as read:
        target = await resolve_target(read, ctx, tenant, peers.peer.url, uuid.UUID(credential_id))
    try:
        await call_tool(ctx, tenant, target, "echo", {}, tool=None, era_hint="modern", db=hub.db)
    except InsufficientScope as exc:
        errors.append(exc)
    step_up = await hub.connect({"credential_id": credential_id})
    assert step_up.callback is not None
    seen += [step_up.created, step_up.callback]
    failed_code = await hub.start({"credential_id": credential_id})
    seen.append(failed_code)
    peers.auth.knobs.refresh_error = "invalid_grant"
    await _expire(hub, peers, credential_id)
    seen.append(await hub.snapshot("linear"))  # 422 credential_unavailable
    seen.append(await hub.client.get(creds, headers=hub.headers))
    seen.append(await hub.client.get(f"{creds}/{credential_id}", headers=hub.headers))
    seen.append(await hub.client.get("/oauth/client-metadata.json"))

    leaked = [value for secret in _secrets(peers) for value in _forms(secret)]
    assert len(_secrets(peers)) >= 6  # tokens, rotated refresh tokens, the client secret
    for response in seen:
        body = response.text + repr(dict(response.headers))
        assert not [v for v in leaked if v in body], response.request.url
    assert "httpcore2" in debug_logs.text  # the libraries really logged at DEBUG
    assert not [v for v in leaked if v in debug_logs.text]
    for error in errors:
        assert not [v for v in leaked if v in exposed_text(error)]
    async with as_owner(hub.db.engine) as owner, owner.connect() as conn:  # every row
        for table in ("credentials", "audit_events", "oauth_authorizations", "oauth_clients"):
            rows = (await conn.execute(text(f"SELECT * FROM {table}"))).all()  # noqa: S608
            assert rows or table == "oauth_authorizations", table  # read above row-level security
            dumped = repr([tuple(r) for r in rows])
            assert not [v for v in leaked if v in dumped], table
