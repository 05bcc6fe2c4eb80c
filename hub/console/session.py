"""Signing in and out, and the console's front door (DESIGN §14, §15).

``GET /console/login`` sets a pre-session cookie and renders the form with a CSRF token bound to
it; ``POST /console/login`` checks the origin and that token, authenticates the key as the API
would and opens a new session (the browser's previous one is deleted: rotation). ``POST
/console/logout`` deletes the session. ``GET /console`` sends a tenant's principal to its
approvals; the platform admin picks a tenant first.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request
from starlette.responses import Response

from hub.audit.actions import Action
from hub.audit.service import record
from hub.auth.console_sessions import csrf_of, end_session, new_token, open_session
from hub.auth.key_format import parse_key
from hub.authz.deps import get_tenant_access
from hub.console.routing import console_router
from hub.console.security import (
    PRE_COOKIE,
    SESSION_COOKIE,
    check_same_origin,
    check_token,
    clear_cookie,
    set_cookie,
)
from hub.console.web import (
    ConsoleDep,
    TenantConsoleDep,
    form_of,
    readable_sections,
    redirect,
    render,
)
from hub.core.deps import SessionDep, get_settings_dep
from hub.core.errors import NotFound, Unauthorized
from hub.core.handlers import request_id_of
from hub.core.pagination import PageParams
from hub.core.paths import is_canonical_id, is_slug
from hub.tenants import service as tenants

__all__ = ["router"]

router = console_router()


def _next(value: str | None) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    if (
        value
        and value.startswith("/console/")
        and not value.startswith("/console//")
        and "\\" not in value
        and not any(ord(c) < 0x21 for c in value)
    ):
        return value
    return "/console"


def _login_page(request: Request, next_url: str, error: str | None, status: int) -> Response:
    public = get_settings_dep(request).public_base_url
    pre = request.cookies.get(PRE_COOKIE) or new_token()
    response = render(
        None,
        request,
        "session/login.html",
        status=status,
        csrf=csrf_of(pre),
        next_url=next_url,
        error=error,
    )
    set_cookie(request, response, PRE_COOKIE, pre, public)
    return response


@router.get("/login", name="console.login_form")
async def login_form(request: Request, next: Annotated[str | None, Query()] = None) -> Response:
    return _login_page(request, _next(next), None, 200)


@router.post("/login", name="console.login")
async def login(request: Request, session: SessionDep) -> Response:
    settings = get_settings_dep(request)
    check_same_origin(request, settings.public_base_url)
    fields = await form_of(request)
    pre = request.cookies.get(PRE_COOKIE)
    if not pre:
        return _login_page(request, "/console", "The form expired; sign in again.", 403)
    check_token(fields.get("csrf"), csrf_of(pre))
    next_url = _next(fields.get("next"))
    key = parse_key(fields.get("api_key", "").strip())
    pepper = settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""
    try:
        if key is None:
            raise Unauthorized()
        login = await open_session(
            session,
            pepper,
            key,
            request_id_of(request),
            request.cookies.get(SESSION_COOKIE),
            settings.console_idle_s,
        )
    except Unauthorized:
        return _login_page(request, next_url, "That API key was not accepted.", 401)
    await record(
        session,
        tenant_id=login.caller.tenant_id,
        actor_id=login.caller.principal_id,
        action=Action.CONSOLE_SIGN_IN,
        resource=f"api_key:{login.caller.api_key_id}",
        request_id=login.caller.request_id,
    )
    response = redirect(next_url)
    set_cookie(request, response, SESSION_COOKIE, login.token, settings.public_base_url)
    clear_cookie(request, response, PRE_COOKIE, settings.public_base_url)
    return response


@router.post("/logout", name="console.logout")
async def logout(console: ConsoleDep) -> Response:
    request = console.request
    token = request.cookies.get(SESSION_COOKIE, "")
    await end_session(console.session, token)
    await record(
        console.session,
        tenant_id=console.caller.tenant_id,
        actor_id=console.caller.principal_id,
        action=Action.CONSOLE_SIGN_OUT,
        resource=f"api_key:{console.caller.api_key_id}",
        request_id=console.request_id,
    )
    response = redirect("/console/login")
    clear_cookie(request, response, SESSION_COOKIE, get_settings_dep(request).public_base_url)
    return response


#: the tenants the platform admin is offered by name (past it: type the slug or id)
TENANT_CHOICES = 200


@router.get("", name="console.home")
async def home(console: ConsoleDep) -> Response:
    own = console.caller.tenant_id
    if own is not None:  # to the first section it may read (approvals when it may read none)
        access = await get_tenant_access(console.request, console.caller, str(own.value))
        sections = await readable_sections(access)
        first = sections[0][0] if sections else "approvals"
        return redirect(f"/console/t/{own.value}/{first}")
    found = await tenants.list_tenants(console.session, PageParams(TENANT_CHOICES, None))
    choices = [(t.slug, t.name, t.status) for t in found.items]
    return render(
        console,
        console.request,
        "session/tenants.html",
        choices=choices,
        more=found.next_cursor is not None,
    )


@router.get("/t/{t}", name="console.tenant_home")
async def tenant_home(page: TenantConsoleDep) -> Response:
    """A tenant's address alone: its first section the caller may read."""
    first = page.sections[0][0] if page.sections else "approvals"
    return redirect(f"/console/t/{page.t}/{first}")


@router.get("/tenant", name="console.tenant_pick")
async def pick_tenant(console: ConsoleDep, t: Annotated[str, Query(max_length=200)]) -> Response:
    """The platform admin's tenant picker (a GET form): to that tenant's approvals."""
    t = t.strip()
    if not (is_canonical_id(t) or is_slug(t)):
        raise NotFound()
    return redirect(f"/console/t/{t}/approvals")
