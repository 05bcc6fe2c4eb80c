"""Every route of the app, classified for the route matrix (``tests/test_route_matrix.py``
fails when one is missing: add new routes here).

Each :class:`Route` says who may call it (``kind``), how to build its body, which body fields name
another object (so tenant B's path with tenant A's ids must be 404), whether it mutates, and how
to prepare a successful call for the audit check (a preparer may create objects in the
:class:`~tests.support.route_world.World`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from tests.support.route_world import World

__all__ = ["ROUTES", "Body", "Ids", "Route"]

Ids = dict[str, str]

Body = Callable[[Ids], dict[str, Any]] | None


@dataclass(frozen=True)
class Route:
    kind: Literal["public", "self", "platform", "tenant"]
    method: str
    path: str
    body: Body = None
    # body fields that carry another object's id (so {t}=B with A's ids must be 404)
    body_refs: tuple[str, ...] = ()
    mutating: bool = False
    # how to call it successfully for the audit check: returns ids to use (may create objects)
    prepare: Callable[[World], Awaitable[Ids]] | None = None
    success: int = 200


def _future() -> str:
    return "2099-01-01T00:00:00+00:00"


async def _ids(w: World) -> Ids:
    return dict(w.a_ids)


def _fresh(what: str) -> Callable[[World], Awaitable[Ids]]:
    async def prepare(w: World) -> Ids:
        return await w.throwaway(dict(w.a_ids), what)

    return prepare


async def _peer_server(w: World) -> Ids:
    """A server of A's whose URL is the world's live MCP peer (a snapshot really discovers)."""
    handle = f"peer{uuid.uuid4().hex[:8]}"
    r = await w.client.post(
        f"/tenants/{w.a_ids['t']}/servers",
        json={"handle": handle, "url": w.peer_url},
        headers=w.a_admin.headers,
    )
    assert r.status_code == 201, r.text
    return {**w.a_ids, "handle": handle}


async def _peer_credential(w: World) -> Ids:
    """A credential of A's pinned to the live peer's origin, and the peer's URL."""
    r = await w.client.post(
        f"/tenants/{w.a_ids['t']}/credentials",
        json={
            "name": "peer",
            "type": "api_key",
            "secret": "peer-secret-0123456789",
            "api_base_url": w.peer_url.rsplit("/", 1)[0],
        },
        headers=w.a_admin.headers,
    )
    return {**w.a_ids, "c": r.json()["data"]["id"], "peer_url": w.peer_url}


async def _oauth_server(w: World) -> Ids:
    """A server of A's behind the world's authorization server (an authorization really starts)."""
    handle = f"oauth{uuid.uuid4().hex[:8]}"
    r = await w.client.post(
        f"/tenants/{w.a_ids['t']}/servers",
        json={"handle": handle, "url": w.oauth_peer_url},
        headers=w.a_admin.headers,
    )
    assert r.status_code == 201, r.text
    return {**w.a_ids, "handle": handle}


def _fresh_key(w: World) -> Awaitable[Ids]:
    async def prepare() -> Ids:
        ids = await w.throwaway(dict(w.a_ids), "principal")
        return await w.throwaway(ids, "key")

    return prepare()


ROUTES: dict[str, Route] = {
    # public and self
    "healthz": Route("public", "GET", "/healthz"),
    "readyz": Route("public", "GET", "/readyz"),
    "metrics": Route("public", "GET", "/metrics"),
    "openapi": Route("public", "GET", "/openapi.json"),
    "swagger_ui_html": Route("public", "GET", "/docs"),
    "swagger_ui_redirect": Route("public", "GET", "/docs/oauth2-redirect"),
    "redoc_html": Route("public", "GET", "/redoc"),
    "docs_asset": Route("public", "GET", "/docs/assets/{name}"),
    "whoami": Route("self", "GET", "/whoami"),
    # platform
    "tenant.create": Route(
        "platform",
        "POST",
        "/tenants",
        body=lambda i: {"slug": f"x{uuid.uuid4().hex[:8]}", "name": "X"},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "tenant.list": Route("platform", "GET", "/tenants"),
    "tenant.get": Route("platform", "GET", "/tenants/{t}"),
    "tenant.update": Route(
        "platform",
        "PATCH",
        "/tenants/{t}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "tenant.disable": Route(
        "platform", "DELETE", "/tenants/{t}", mutating=True, prepare=_ids, success=204
    ),
    "platform_key.create": Route(
        "platform",
        "POST",
        "/platform/keys",
        body=lambda i: {},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "platform_key.list": Route("platform", "GET", "/platform/keys"),
    "platform_key.revoke": Route(
        "platform",
        "DELETE",
        "/platform/keys/{k}",
        mutating=True,
        prepare=_fresh("platform_key"),
        success=204,
    ),
    "platform_key.roll": Route(
        "platform",
        "POST",
        "/platform/keys/{k}/roll",
        body=lambda i: {"old_key_expires_at": _future()},
        mutating=True,
        prepare=_fresh("platform_key"),
        success=201,
    ),
    # tenant: principals and keys
    "principal.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/principals",
        body=lambda i: {"kind": "agent", "name": "new"},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "principal.list": Route("tenant", "GET", "/tenants/{t}/principals"),
    "principal.get": Route("tenant", "GET", "/tenants/{t}/principals/{p}"),
    "principal.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/principals/{p}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "principal.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/principals/{p}",
        mutating=True,
        prepare=_fresh("principal"),
        success=204,
    ),
    "api_key.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/principals/{p}/keys",
        body=lambda i: {},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "api_key.list": Route("tenant", "GET", "/tenants/{t}/principals/{p}/keys"),
    "api_key.revoke": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/principals/{p}/keys/{k}",
        mutating=True,
        prepare=_fresh_key,
        success=204,
    ),
    "api_key.roll": Route(
        "tenant",
        "POST",
        "/tenants/{t}/principals/{p}/keys/{k}/roll",
        body=lambda i: {"old_key_expires_at": _future()},
        mutating=True,
        prepare=_fresh_key,
        success=201,
    ),
    # tenant: grants
    "grant.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/grants",
        body=lambda i: {
            "principal_id": i["p"],
            "resource": f"tool:n{uuid.uuid4().hex[:6]}.*",
            "action": "call",
            "effect": "allow",
        },
        body_refs=("principal_id",),
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "grant.list": Route("tenant", "GET", "/tenants/{t}/grants"),
    "grant.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/grants/{g}",
        mutating=True,
        prepare=_fresh("grant"),
        success=204,
    ),
    "grant.check": Route(
        "tenant",
        "POST",
        "/tenants/{t}/grants/check",
        body=lambda i: {"principal_id": i["p"], "resource": "tool:x.y", "action": "call"},
        body_refs=("principal_id",),
    ),
    # tenant: credentials
    "credential.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/credentials",
        body=lambda i: {
            "name": "c",
            "type": "api_key",
            "secret": "s3cret-0123456789ab",
            "api_base_url": "https://api.example.com",
        },
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "credential.list": Route("tenant", "GET", "/tenants/{t}/credentials"),
    "credential.get": Route("tenant", "GET", "/tenants/{t}/credentials/{c}"),
    "credential.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/credentials/{c}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "credential.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/credentials/{c}",
        mutating=True,
        prepare=_fresh("credential"),
        success=204,
    ),
    # tenant: servers, catalogs, deployments
    "server.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/servers",
        body=lambda i: {"handle": f"s{uuid.uuid4().hex[:8]}", "url": "https://s.example.com/mcp"},
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "server.list": Route("tenant", "GET", "/tenants/{t}/servers"),
    "server.get": Route("tenant", "GET", "/tenants/{t}/servers/{handle}"),
    "server.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/servers/{handle}",
        body=lambda i: {"url": "https://moved.example.com/mcp"},
        mutating=True,
        prepare=_fresh("server"),
    ),
    "server.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/servers/{handle}",
        mutating=True,
        prepare=_fresh("server"),
        success=204,
    ),
    "catalog.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/servers/{handle}/catalogs",
        mutating=True,
        prepare=_peer_server,
        success=201,
    ),
    "mcp.discover": Route(
        "tenant",
        "POST",
        "/tenants/{t}/mcp/discover",
        body=lambda i: {
            "url": i.get("peer_url", "https://alpha.example.com/mcp"),
            "credential_id": i["c"],
        },
        body_refs=("credential_id",),
        mutating=True,
        prepare=_peer_credential,
    ),
    "catalog.list": Route("tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs"),
    "catalog.latest": Route("tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs/latest"),
    "catalog.get": Route("tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs/{version}"),
    "catalog.diff": Route(
        "tenant", "GET", "/tenants/{t}/servers/{handle}/catalogs/{version}/diff?from=1"
    ),
    "deployment.create": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments",
        body=lambda i: {
            "agent_id": i["p"],
            "entries": [{"server": i["handle"], "catalog_version": 1}],
        },
        body_refs=("agent_id",),
        mutating=True,
        prepare=_ids,
        success=201,
    ),
    "deployment.list": Route("tenant", "GET", "/tenants/{t}/deployments"),
    "deployment.get": Route("tenant", "GET", "/tenants/{t}/deployments/{d}"),
    "deployment.update": Route(
        "tenant",
        "PATCH",
        "/tenants/{t}/deployments/{d}",
        body=lambda i: {"name": "renamed"},
        mutating=True,
        prepare=_ids,
    ),
    "deployment.delete": Route(
        "tenant",
        "DELETE",
        "/tenants/{t}/deployments/{d}",
        mutating=True,
        prepare=_fresh("deployment"),
        success=204,
    ),
    "deployment.bundle": Route("tenant", "GET", "/tenants/{t}/deployments/{d}/bundle"),
    "deployment.drift": Route("tenant", "GET", "/tenants/{t}/deployments/{d}/drift"),
    # tenant: approvals and the agents' MCP endpoint
    "approval.list": Route("tenant", "GET", "/tenants/{t}/approvals"),
    "approval.get": Route("tenant", "GET", "/tenants/{t}/approvals/{a}"),
    "approval.decide": Route(
        "tenant",
        "POST",
        "/tenants/{t}/approvals/{a}/decision",
        body=lambda i: {"decision": "approve", "note": "ok"},
        mutating=True,
        prepare=_fresh("approval"),
    ),
    "gateway.mcp": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/mcp",
        body=lambda i: {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ),
    # GET and DELETE are 405 for everyone (stateless in both eras): nothing to authorise, nothing
    # revealed about the tenant or deployment named
    "gateway.mcp_stream": Route("public", "GET", "/tenants/{t}/deployments/{d}/mcp"),
    # only the deployment's sidecar service principal may lease (everyone else: 403)
    "credential.lease": Route(
        "tenant",
        "POST",
        "/tenants/{t}/credentials/{c}/lease",
        body=lambda i: {"deployment_id": i["d"]},
        body_refs=("deployment_id",),
    ),
    # the same caller reports an upstream's 403 insufficient_scope on a leased OAuth token
    "credential.challenge": Route(
        "tenant",
        "POST",
        "/tenants/{t}/credentials/{c}/challenges",
        body=lambda i: {
            "deployment_id": i["d"],
            "fingerprint": "0123456789abcdef",
            "scopes": ["mcp:write"],
        },
        body_refs=("deployment_id",),
    ),
    # direct mode: the deployment's agent asks the hub's decision and reports the outcome
    "deployment.decide": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/decisions",
        body=lambda i: {"wire_name": "x__y", "arguments": {}},
    ),
    "deployment.decision_relist": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/decisions/{decision_id}/relist",
    ),
    "deployment.decision_outcome": Route(
        "tenant",
        "POST",
        "/tenants/{t}/deployments/{d}/decisions/{decision_id}/outcome",
        body=lambda i: {"outcome": "success"},
    ),
    # tenant: OAuth (the callback is authorised by its state alone)
    "oauth.authorize": Route(
        "tenant",
        "POST",
        "/tenants/{t}/oauth/authorizations",
        body=lambda i: {"server": i["handle"]},
        body_refs=("server",),
        mutating=True,
        prepare=_oauth_server,
        success=201,
    ),
    "oauth_authorization.get": Route("tenant", "GET", "/tenants/{t}/oauth/authorizations/{o}"),
    "oauth.callback": Route("public", "GET", "/oauth/callback"),
    "oauth.client_metadata": Route("public", "GET", "/oauth/client-metadata.json"),
    # tenant: the audit trail (audit : read), and the platform's own chain
    "audit.list": Route("tenant", "GET", "/tenants/{t}/audit"),
    "audit.verify": Route("tenant", "GET", "/tenants/{t}/audit/verify"),
    "audit.export": Route("tenant", "GET", "/tenants/{t}/audit/export"),
    "platform_audit.list": Route("platform", "GET", "/platform/audit"),
    "platform_audit.verify": Route("platform", "GET", "/platform/audit/verify"),
    "platform_audit.export": Route("platform", "GET", "/platform/audit/export"),
}
