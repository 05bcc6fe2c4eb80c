"""What every console page shares: the route class, the signed-in dependency, rendering.

:class:`ConsoleRoute` turns a :class:`~hub.core.errors.HubError` into an HTML page of the same
status (a 403 names what was refused, another tenant's ids read as 404) and puts the security
headers on every response; a request without a live session is sent to the sign-in page (GET) or
refused (401). :func:`signed_in` resumes the session and, for unsafe methods, checks the origin
and the CSRF token before the page's work runs; :func:`tenant_console` adds the tenant the page
acts in, resolved exactly as the API resolves ``{t}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

from fastapi import Depends, Path, Request
from fastapi.exceptions import RequestValidationError
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.background import BackgroundTask
from starlette.responses import HTMLResponse, RedirectResponse, Response

from hub.auth.caller import Caller, TenantAccess
from hub.auth.console_sessions import csrf_of, resume_session
from hub.authz.deps import get_tenant_access, item_resource, require
from hub.authz.throttle import enforce
from hub.console.failures import audit_refusal
from hub.console.security import (
    SESSION_COOKIE,
    UNSAFE,
    check_same_origin,
    check_token,
    secure_headers,
)
from hub.core.deps import SessionDep, SessionRoute, get_settings_dep
from hub.core.errors import BadRequest, HubError, RateLimited
from hub.core.handlers import request_id_of
from hub.core.invisible import escaped, hidden, shown
from hub.core.logging import bind_context
from hub.principals.service import caller_name

__all__ = [
    "Console",
    "ConsoleDep",
    "ConsoleRoute",
    "TenantConsole",
    "TenantConsoleDep",
    "exact_json",
    "form_of",
    "redirect",
    "render",
]


class SignInRequired(Exception):
    """No live console session."""


env = Environment(
    loader=PackageLoader("hub.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def exact_json(value: Any) -> str:
    """``value`` as indented JSON, every character that could hide or reorder text escaped.

    ``json.dumps`` escapes C0 controls already; what is left of the invisible and bidirectional
    characters can only stand inside strings, where ``\\uXXXX`` means the same: the text parses
    back to exactly ``value``."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(escaped(c) if ord(c) > 0x7E and hidden(c) else c for c in text)


def visible(value: Any) -> str:
    """``value`` as text with the characters that could hide or reorder it (bidirectional
    overrides, zero-width, controls) shown as ``\\uXXXX``, as :func:`exact_json` shows them: for
    what an upstream wrote (a tool's name and description) outside the JSON."""
    return shown(str(value))


#: how much of a call's arguments the approvals queue shows (the approval's page shows them all)
PREVIEW_CHARS = 80


def preview(value: Any) -> str:
    """``value`` as one line of compact JSON, at most :data:`PREVIEW_CHARS` characters (then
    ``…``), escaped as :func:`visible` escapes: to tell a queue's rows apart, never to decide on."""
    text = visible(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


env.filters["exact_json"] = exact_json
env.filters["visible"] = visible
env.filters["preview"] = preview
env.filters["urlpart"] = lambda value: quote(str(value), safe="")


@dataclass(frozen=True)
class Console:
    """A signed-in console request."""

    request: Request
    session: AsyncSession
    caller: Caller
    csrf: str
    who: str  # the header's "Signed in as": the caller's name and role

    @property
    def request_id(self) -> str:
        return request_id_of(self.request)


#: The console's sections in a tenant: (path, label, and what reading its page needs)
SECTIONS: tuple[tuple[str, str, str, str], ...] = (
    ("approvals", "Approvals", "approval:*", "read"),
    ("deployments", "Deployments", "deployment:*", "read"),
    ("servers", "Servers", "server:*", "read"),
    ("grants", "Grants", "grant:*", "read"),
    ("credentials", "Credentials", "credential:*", "read"),
    ("audit", "Audit", "audit", "read"),
)


async def readable_sections(access: TenantAccess) -> tuple[tuple[str, str], ...]:
    """The (path, label) of each section whose page ``access`` may read: the navigation offers
    only those (a link to a 403 page is a dead end, and each refusal is an audit row)."""
    readable = []
    for path, label, resource, action in SECTIONS:
        if await access.effect(resource, action) == "allow":
            readable.append((path, label))
    return tuple(readable)


@dataclass(frozen=True)
class TenantConsole(Console):
    """A signed-in request acting in a tenant; ``t`` is the path's spelling of it (for links);
    ``sections``, what its navigation offers."""

    access: TenantAccess
    t: str
    sections: tuple[tuple[str, str], ...] = ()

    async def require(self, resource: str, action: str) -> None:
        """403 naming the resource and action, unless the caller's decision is ``allow``."""
        await require(self.request, self.session, self.access, resource, action)

    async def require_item(self, kind: str, raw: str, action: str) -> None:
        await self.require(item_resource(kind, raw), action)

    async def may(self, resource: str, action: str) -> bool:
        return await self.access.effect(resource, action) == "allow"


async def form_of(request: Request) -> dict[str, str]:
    """The urlencoded form's fields (the last value of each; files are refused)."""
    form = await request.form()
    fields: dict[str, str] = {}
    for name, value in form.multi_items():
        if not isinstance(value, str):
            raise BadRequest("files are not accepted")
        fields[name] = value
    return fields


async def _who(session: AsyncSession, caller: Caller) -> str:
    """``name (role)``: who the console is signed in as, so a shared screen or a second key
    is not mistaken for one's own (the id when the name is not readable)."""
    name = await caller_name(session, caller) or str(caller.principal_id)
    role = "platform admin" if caller.is_platform_admin else (caller.role or caller.kind)
    return f"{name} ({role.replace('_', ' ')})"


async def signed_in(request: Request, session: SessionDep) -> Console:
    settings = get_settings_dep(request)
    if request.method in UNSAFE:
        check_same_origin(request, settings.public_base_url)
    token = request.cookies.get(SESSION_COOKIE)
    caller = None
    if token:
        caller = await resume_session(
            session, token, settings.console_idle_s, request_id_of(request)
        )
    if caller is None or token is None:
        raise SignInRequired()
    bind_context(
        principal_id=str(caller.principal_id),
        tenant_id=str(caller.tenant_id) if caller.tenant_id else None,
    )
    console = Console(request, session, caller, csrf_of(token), await _who(session, caller))
    request.state.console = console  # for the error page's navigation and the audit of refusals
    if request.method in UNSAFE:
        presented = request.headers.get("x-csrf-token") or (await form_of(request)).get("csrf")
        check_token(presented, console.csrf)
    return console


ConsoleDep = Annotated[Console, Depends(signed_in)]


async def tenant_console(
    console: ConsoleDep, t: Annotated[str, Path(description="Tenant id or slug")]
) -> TenantConsole:
    request = console.request
    access = await get_tenant_access(request, console.caller, t)
    limited = Response()
    await enforce(request, limited, "rest", str(console.caller.principal_id))
    sections = await readable_sections(access)
    page = TenantConsole(
        request,
        console.session,
        console.caller,
        console.csrf,
        console.who,
        access,
        t,
        sections,
    )
    request.state.console = page
    return page


TenantConsoleDep = Annotated[TenantConsole, Depends(tenant_console)]


def render(
    console: Console | None,
    request: Request,
    template: str,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    csrf = console.csrf if console else str(context.pop("csrf", ""))
    page = env.get_template(template).render(
        console=console,
        caller=console.caller if console else None,
        csrf=csrf,
        t=getattr(console, "t", None),
        request_id=request_id_of(request),
        **context,
    )
    return HTMLResponse(page, status_code=status)


def redirect(url: str) -> RedirectResponse:
    """After a form: 303 to a page of the console (POST, then GET)."""
    return RedirectResponse(url, status_code=303)


_TITLES = {
    400: "The request was not accepted",
    401: "Sign in again",
    403: "Not permitted",
    404: "Not found",
    409: "That cannot be done now",
    413: "Too large",
    422: "That did not work",
    429: "Too many requests",
    503: "Unavailable",
}


def _back(request: Request) -> str | None:
    """The console page the request came from (its ``Referer``, when a page of this console on
    this origin, other than a page that just failed): where a refused form's "Back" goes, where
    the browser keeps what was typed. Only a path is kept, so the link stays on this origin."""
    came = urlsplit(request.headers.get("referer", ""))
    if came.netloc != request.url.netloc or not came.path.startswith("/console/"):
        return None
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    back = came.path + (f"?{came.query}" if came.query else "")
    if came.path == "/console/login" or (request.method == "GET" and back == here):
        return None  # the sign-in form, or the page that just failed
    return back


def error_page(request: Request, error: HubError) -> HTMLResponse:
    """The error's page; signed in, with the console's navigation (the tenant's only once it
    was admitted to it: a 404 for another tenant links nowhere inside it)."""
    console: Console | None = getattr(request.state, "console", None)
    response = render(
        console,
        request,
        "error.html",
        status=error.status_code,
        title=_TITLES.get(error.status_code, "Something went wrong"),
        message=error.message,
        resource=error.extra.get("resource"),
        action=error.extra.get("action"),
        back=_back(request) if console is not None else None,
    )
    if isinstance(error, RateLimited):
        response.headers.update(error.headers)
    return response


def _sign_in(request: Request) -> Response:
    if request.method in UNSAFE:
        return render(
            None,
            request,
            "error.html",
            status=401,
            title=_TITLES[401],
            message="Your console session has ended.",
            resource=None,
            action=None,
            back=None,
        )
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.headers.get("hx-request") == "true":
        # htmx's polling: the whole page goes to sign-in, not a fragment swapped into it
        target = request.headers.get("hx-current-url", "") or target
        target = urlsplit(target).path or "/console"
        return Response(headers={"hx-redirect": f"/console/login?next={quote(target, safe='')}"})
    return RedirectResponse(f"/console/login?next={quote(target, safe='')}", status_code=303)


class ConsoleRoute(SessionRoute):
    """A console page: errors become HTML pages, and every response carries the headers."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInRequired:
                response = _sign_in(request)
            except HubError as error:
                response = error_page(request, error)
                # after the response: the request's session (and its lock) is closed only then
                console: Console | None = getattr(request.state, "console", None)
                caller = console.caller if console else None
                response.background = BackgroundTask(
                    audit_refusal, request, caller, request_id_of(request), error
                )
            except (RequestValidationError, ValidationError):
                response = error_page(request, BadRequest("the form's values are invalid"))
            return secure_headers(response)

        return page
