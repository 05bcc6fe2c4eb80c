"""The credentials page: metadata only — a secret is write-only (typed into a form, sent to the
service, never shown again, never echoed into a page) — add a credential, replace a secret
(DESIGN §9, §14), with the API's authorisation (``credential`` read and write)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.responses import Response

from hub.console.routing import console_router
from hub.console.web import TenantConsoleDep, form_of, redirect, render
from hub.core.deps import DatabaseDep
from hub.core.errors import BadRequest
from hub.core.pagination import PageParams
from hub.core.paths import parse_id
from hub.credentials import service
from hub.credentials.deps import CredentialContextDep
from hub.credentials.schemas import CredentialCreate, CredentialRead, CredentialUpdate
from hub.oauth import service as oauth
from hub.oauth.deps import OAuthContextDep
from hub.oauth.schemas import AuthorizationCreate

__all__ = ["router"]

router = console_router("/t/{t}/credentials")

TYPES = ("api_key", "oauth_token", "secret")
LIMIT = 200


@router.get("", name="console.credentials")
async def credentials(page: TenantConsoleDep) -> Response:
    await page.require("credential:*", "read")
    result = await service.list_credentials(page.session, page.access, PageParams(LIMIT, None))
    return render(
        page,
        page.request,
        "credentials/list.html",
        items=[CredentialRead.model_validate(c) for c in result.items],
        more=result.next_cursor,
        types=TYPES,
        may_write=await page.may("credential:*", "write"),
    )


@router.post("", name="console.credential_create")
async def create(page: TenantConsoleDep, ctx: CredentialContextDep) -> Response:
    await page.require("credential:*", "write")
    fields = await form_of(page.request)
    body: dict[str, Any] = {"name": fields.get("name", "").strip(), "type": fields.get("type")}
    if fields.get("api_base_url", "").strip():
        body["api_base_url"] = fields["api_base_url"].strip()
    if fields.get("secret"):
        body["secret"] = fields["secret"]
    try:
        data = CredentialCreate.model_validate(body)
    except ValidationError as refused:
        raise BadRequest(f"the credential was not added: {_why(refused)}") from None
    await service.create_credential(page.session, ctx, page.access, data)
    return redirect(f"/console/t/{page.t}/credentials")


def _why(refused: ValidationError) -> str:
    """What each refused field was refused for, as the API says it (never the value typed: a
    secret is among the fields). Stop 50: the form said only "needs a name and a type" for a
    name refused as ``..`` or holding an invisible character."""
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'form'}: "
        f"{str(error['msg']).removeprefix('Value error, ')}"
        for error in refused.errors(include_input=False, include_url=False)
    )


@router.post("/{c}/secret", name="console.credential_secret")
async def replace_secret(c: str, page: TenantConsoleDep, ctx: CredentialContextDep) -> Response:
    await page.require_item("credential", c, "write")
    fields = await form_of(page.request)
    try:
        data = CredentialUpdate.model_validate({"secret": fields.get("secret", "")})
    except ValidationError:
        raise BadRequest("the secret is too long") from None
    if not fields.get("secret"):
        raise BadRequest("type the new secret")
    await service.update_credential(page.session, ctx, page.access, parse_id(c), data)
    return redirect(f"/console/t/{page.t}/credentials")


@router.post("/{c}/oauth", name="console.credential_oauth")
async def reauthorize(
    c: str, page: TenantConsoleDep, db: DatabaseDep, ctx: OAuthContextDep
) -> Response:
    """Re-authorise an ``oauth_token`` credential (its scopes kept and widened by the service);
    the page links to the authorization server, as a server's “Connect with OAuth”."""
    await page.require("credential:*", "write")
    credential_id = parse_id(c)
    started = await oauth.create_authorization(
        db, page.session, ctx, page.access, AuthorizationCreate(credential_id=credential_id)
    )
    return render(
        page,
        page.request,
        "servers/oauth.html",
        subject=str(credential_id),
        back=f"/console/t/{page.t}/credentials",
        url=started.authorization_url,
        expires_at=started.row.expires_at,
    )
