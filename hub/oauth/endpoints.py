"""OAuth routes (DESIGN §4, §9, §15): start an authorization, read its status, the callback, and
the hub's client ID metadata document."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from hub.auth.caller import TenantAccess
from hub.authz.deps import authorize
from hub.authz.throttle import rest_router
from hub.core.deps import DatabaseDep, SessionDep, SessionRoute
from hub.core.openapi import error_response
from hub.core.paths import parse_id
from hub.core.schemas import Envelope
from hub.grants.deps import PolicyCacheDep
from hub.oauth import service
from hub.oauth.config import CALLBACK_PATH, CLIENT_METADATA_PATH
from hub.oauth.deps import OAuthContextDep
from hub.oauth.exceptions import CALLBACK_REFUSALS, MESSAGES
from hub.oauth.page import callback_page
from hub.oauth.schemas import (
    AuthorizationCreate,
    AuthorizationCreated,
    AuthorizationRead,
    ClientMetadataDocument,
)

router = rest_router(prefix="/tenants/{t}/oauth", tags=["oauth"])
public_router = APIRouter(tags=["oauth"], route_class=SessionRoute)

_FLOW_REASONS = sorted(set(MESSAGES) - CALLBACK_REFUSALS - {"token_request_failed"})
OAUTH_FAILED = error_response(
    "The OAuth flow failed before an authorization URL existed; `reason` is one of: "
    + ", ".join(f"`{r}`" for r in _FLOW_REASONS)
)


def _html(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}


@router.post(
    "/authorizations", status_code=201, name="oauth.authorize", responses={422: OAUTH_FAILED}
)
async def create_authorization(
    body: AuthorizationCreate,
    db: DatabaseDep,
    session: SessionDep,
    ctx: OAuthContextDep,
    access: Annotated[TenantAccess, authorize("credential", "write")],
) -> Envelope[AuthorizationCreated]:
    """Discover the server's authorization server, register the hub as its client if needed,
    and answer the URL to open in a browser (valid 10 minutes, single use)."""
    started = await service.create_authorization(db, session, ctx, access, body)
    return Envelope(
        data=AuthorizationCreated(
            id=started.row.id,
            authorization_url=started.authorization_url,
            expires_at=started.row.expires_at,
        )
    )


@router.get("/authorizations/{o}", name="oauth_authorization.get")
async def get_authorization(
    o: str,
    session: SessionDep,
    access: Annotated[TenantAccess, authorize("credential", "read")],
) -> Envelope[AuthorizationRead]:
    """An authorization's status: pending, completed (with the credential) or failed (with its
    reason)."""
    return Envelope(data=await service.get_authorization(session, access.tenant_id, parse_id(o)))


@public_router.get(
    CALLBACK_PATH,
    name="oauth.callback",
    response_class=HTMLResponse,
    responses={
        200: _html("Connected: the credential is stored (the page shows no token)"),
        400: _html(
            "Refused before any token request; the page names the reason code: "
            + ", ".join(f"`{r}`" for r in sorted(CALLBACK_REFUSALS))
        ),
        422: _html(
            "The authorization server did not issue a usable token (`token_request_failed`)"
        ),
    },
)
async def oauth_callback(
    db: DatabaseDep,
    ctx: OAuthContextDep,
    policies: PolicyCacheDep,
    code: Annotated[str | None, Query()] = None,
    state: Annotated[str | None, Query()] = None,
    iss: Annotated[str | None, Query()] = None,
    error: Annotated[str | None, Query()] = None,
) -> HTMLResponse:
    """Where the authorization server sends the browser back; authorised by ``state`` alone."""
    outcome = await service.complete_callback(
        db, ctx, policies, state=state, code=code, iss=iss, error=error
    )
    return callback_page(outcome)


@public_router.get(CLIENT_METADATA_PATH, name="oauth.client_metadata")
async def client_metadata(ctx: OAuthContextDep) -> ClientMetadataDocument:
    """The hub's OAuth client ID metadata document (the client id, when the authorization
    server supports such documents, is its URL)."""
    return service.client_metadata(ctx.config)
