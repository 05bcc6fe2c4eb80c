"""The MCP conformance suite's client command for the ``auth/*`` scenarios: the hub, headless.

The runner (``tests.peers.conformance``) starts a scenario's mock MCP server and authorization
server(s) on loopback and runs ``<command> <server-url>``; this module is that command::

    python -m tests.oauth.conformance_auth_adapter http://localhost:PORT/mcp

(the test runs it in a :mod:`tests.support.forkserver` child, so the hub is imported once per
run rather than once per scenario; it behaves as the command line above).

It drives a whole hub in process — the app of ``hub.app.create_app`` on a fresh SQLite database
(``HUB_ALLOW_LOOPBACK`` on, since the mocks are on loopback; ``HUB_OAUTH_CLIENT_ID_URL`` the
client-ID metadata document URL the CIMD scenario expects) — exactly as an operator and a
consenting user would:

1. as the platform admin, create a tenant and register the server URL (the era the scenario
   speaks, ``MCP_CONFORMANCE_PROTOCOL_VERSION``, is remembered on the server row, as an earlier
   discovery would have);
2. ``POST /tenants/{t}/oauth/authorizations {"server": …}`` (with the scenario's pre-registered
   ``client`` from ``MCP_CONFORMANCE_CONTEXT`` when it has one);
3. GET the authorization URL through the hub's egress fetcher with redirects off, read the
   ``Location`` and call ``GET /oauth/callback`` with its query;
4. snapshot the server (``POST …/servers/{h}/catalogs``: ``tools/list`` with the token) and call
   every tool with ``hub.upstream.call_tool`` — the gateway's path, with refresh-on-use and one
   refresh and retry on a 401.

When a use fails with ``insufficient_scope`` the adapter steps up — a new authorization naming the
credential (``{"credential_id"}``: the hub asks for the union of the recorded and challenged
scopes, and caps the attempts) — and retries; when it fails with ``unauthorized`` even after the
hub's own refresh, it re-authorises once (a server that moved to a new authorization server). Any
other failure, or a refusal by the hub (``resource_mismatch``, ``iss_mismatch``…), ends the run
with exit code 1, which the refusal scenarios expect.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx2
from pydantic import SecretStr
from sqlalchemy import update

from hub.app import create_app
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.migrations import upgrade
from hub.core.settings import Settings
from hub.core.tenancy import system_scope
from hub.mcp import McpError
from hub.models import Server
from hub.principals.bootstrap import bootstrap_platform_admin
from hub.upstream import (
    InsufficientScope,
    TokenUnavailable,
    UpstreamContext,
    call_tool,
    resolve_target,
)
from tests.oauth.support import authorize_headlessly
from tests.support.databases import owner_session

CIMD_CLIENT_ID = "https://conformance-test.local/client-metadata.json"
PEPPER = "conformance-pepper-0123456789abcdef0123456789"
HANDLE = "conformance"
MAX_AUTHORIZATIONS = 4  # the hub caps step-ups itself; this only bounds the adapter's loop


def say(message: str) -> None:
    sys.stderr.write(f"conformance auth adapter: {message}\n")


def _migrate(url: str) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            upgrade(url)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def _settings(database_url: str) -> Settings:
    key = base64.b64encode(os.urandom(32)).decode()
    return Settings(
        database_url=database_url,
        encryption_keys=SecretStr(f"c1:{key}"),
        api_key_pepper=SecretStr(PEPPER),
        allow_loopback=True,
        public_url="http://127.0.0.1:9",  # never contacted: the callback is called in process
        oauth_client_id_url=CIMD_CLIENT_ID,
        discovery_timeout_s=15,
        workers=False,
    )


class Adapter:
    def __init__(self, app: Any, db: Database, client: httpx2.AsyncClient, url: str) -> None:
        self.app = app
        self.db = db
        self.client = client
        self.url = url
        self.headers: dict[str, str] = {}
        self.tenant = ""
        self.credential_id: str | None = None
        self.authorizations = 0
        version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")
        self.era = "modern" if version >= "2026" else "legacy"
        self.context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")

    async def setup(self) -> None:
        key = await bootstrap_platform_admin(self.db, PEPPER.encode(), force=True)
        self.headers = {"authorization": f"Bearer {key}"}
        made = await self.client.post(
            "/tenants", json={"slug": "conformance", "name": "Conformance"}, headers=self.headers
        )
        self.tenant = made.json()["data"]["id"]
        server = await self.client.post(
            f"/tenants/{self.tenant}/servers",
            json={"handle": HANDLE, "url": self.url},
            headers=self.headers,
        )
        if server.status_code != 201:
            raise SystemExit(f"server registration refused: {server.text}")
        async with owner_session(self.db) as session:
            await session.execute(
                update(Server).where(Server.handle == HANDLE).values(era=self.era)
            )

    async def authorize(self) -> bool:
        self.authorizations += 1
        if self.authorizations > MAX_AUTHORIZATIONS:
            say("giving up: too many authorizations")
            return False
        body: dict[str, Any] = (
            {"credential_id": self.credential_id} if self.credential_id else {"server": HANDLE}
        )
        if "client_id" in self.context and not self.credential_id:
            body["client"] = {"client_id": self.context["client_id"]}
            if self.context.get("client_secret"):
                body["client"]["client_secret"] = self.context["client_secret"]
        started = await self.client.post(
            f"/tenants/{self.tenant}/oauth/authorizations", json=body, headers=self.headers
        )
        if started.status_code != 201:
            say(f"authorization refused: {started.status_code} {started.text}")
            return False
        data = started.json()["data"]
        callback = await authorize_headlessly(self.app, self.client, data["authorization_url"])
        status = await self.client.get(
            f"/tenants/{self.tenant}/oauth/authorizations/{data['id']}", headers=self.headers
        )
        read = status.json()["data"]
        say(f"callback {callback.status_code}: {read['status']} {read.get('reason')}")
        if read["status"] != "completed":
            return False
        self.credential_id = read["credential_id"]
        return True

    async def snapshot(self) -> tuple[str | None, list[dict[str, Any]]]:
        response = await self.client.post(
            f"/tenants/{self.tenant}/servers/{HANDLE}/catalogs", headers=self.headers
        )
        if response.status_code in (200, 201):
            return None, list(response.json()["data"]["tools"])
        reason = response.json()["error"].get("reason", "failed")
        say(f"snapshot failed: {reason}")
        return str(reason), []

    async def call(self, tool: dict[str, Any]) -> str | None:
        ctx = components_of(self.app).get(UpstreamContext)
        tenant_id = system_scope(uuid.UUID(self.tenant), reason="conformance adapter")
        async with owner_session(self.db, write=False) as read:
            target = await resolve_target(
                read, ctx, tenant_id, self.url, uuid.UUID(self.credential_id or "")
            )
        try:
            result = await call_tool(
                ctx, tenant_id, target, tool["name"], {}, tool=tool, era_hint=self.era, db=self.db
            )
        except InsufficientScope:
            return "insufficient_scope"
        except TokenUnavailable as exc:
            return exc.reason
        except McpError as exc:
            return exc.reason
        say(f"called {tool['name']}: isError={result.is_error}")
        return None

    async def use(self) -> bool:
        """Snapshot, then call every tool; step up or re-authorise as the failures say."""
        reauthorized = False
        while True:
            reason, tools = await self.snapshot()
            for tool in tools if reason is None else ():
                reason = await self.call(tool)
                if reason is not None:
                    break
            if reason is None:
                return True
            if reason == "insufficient_scope" or (reason == "unauthorized" and not reauthorized):
                reauthorized = reauthorized or reason == "unauthorized"
                if not await self.authorize():
                    return False
                continue
            say(f"failed: {reason}")
            return False


async def main(url: str) -> int:
    say(f"scenario {os.environ.get('MCP_CONFORMANCE_SCENARIO', '?')} against {url}")
    with tempfile.TemporaryDirectory() as tmp:
        database_url = f"sqlite+aiosqlite:///{Path(tmp) / 'hub.db'}"
        _migrate(database_url)
        db = Database.from_url(database_url)
        app = create_app(_settings(database_url), database=db)
        try:
            async with app.router.lifespan_context(app):
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(
                    transport=transport, base_url="http://hub.test"
                ) as client:
                    adapter = Adapter(app, db, client, url)
                    await adapter.setup()
                    ok = await adapter.authorize() and await adapter.use()
        finally:
            await db.dispose()
    say("done" if ok else "failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
