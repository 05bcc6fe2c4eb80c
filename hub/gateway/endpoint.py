"""``POST /tenants/{t}/deployments/{d}/mcp``: the agents' MCP endpoint (DESIGN §10.4, §15).

Order: a browser ``Origin`` not in ``HUB_ALLOWED_ORIGINS`` → 403 (DNS-rebinding protection);
one authentication for the whole HTTP request (a batch included): none or invalid → 401 with
``WWW-Authenticate: Bearer`` and JSON-RPC ``40100``; the body must be JSON (400 ``-32700``);
another tenant (``{t}`` is an id or a slug) or an unknown deployment → 404 (``40400``); a
caller that is not the deployment's agent — the platform admin and tenant admins included — →
403 with ``40300``. Then the request is classified by era and dispatched (:mod:`hub.mcp.server`)
to the deployment's :class:`~hub.gateway.host.GatewayHost`. The calls' audit rows go to the
replica's :class:`~hub.audit.writer.AuditWriter` and are awaited after the answer is sent. An
agent that closes its request cancels its calls (:mod:`~hub.gateway.disconnect`); a request the
end of ``hub serve``'s shutdown grace cancels is answered ``50300``
(:mod:`hub.gateway.shutdown`). Stateless in both eras: GET and DELETE are 405.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.background import BackgroundTask
from starlette.responses import JSONResponse

from hub.approvals.links import console_path
from hub.approvals.service import ApprovalContext
from hub.audit.writer import AuditWriter
from hub.auth.caller import Caller
from hub.auth.deps import admit_request_values, authenticate_request, parsed_key, pepper_of
from hub.auth.key_format import ParsedKey, hash_key
from hub.authz.deps import tenant_of_path
from hub.core import clock
from hub.core.components import components_of
from hub.core.db import Database
from hub.core.db_errors import database_unavailable
from hub.core.deps import get_database
from hub.core.errors import Unauthorized
from hub.core.handlers import refuses_its_methods
from hub.core.metrics import Metrics
from hub.core.middleware import BodyTooLarge, too_large_rpc
from hub.core.paths import is_canonical_id, is_slug, parse_id
from hub.core.route_shape import ShapedRoute
from hub.core.settings import Settings
from hub.drift import DriftWatch
from hub.gateway.adapters.approvals import HubApprovals
from hub.gateway.adapters.audit import HubAudit
from hub.gateway.adapters.decide import PolicyDecider
from hub.gateway.adapters.read import read_call
from hub.gateway.adapters.recheck import approval_recheck
from hub.gateway.adapters.request_state import RequestStates
from hub.gateway.adapters.upstream import HubUpstream
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.disconnect import unless_gone
from hub.gateway.engine.engine import Gateway
from hub.gateway.engine.errors import FORBIDDEN, UNAUTHENTICATED
from hub.gateway.engine.model import ServerEntry
from hub.gateway.host import GatewayHost
from hub.gateway.shutdown import (
    audited,
    cut_batch,
    cut_by_shutdown,
    cut_unavailable,
    stopping,
    unavailable_error,
)
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.mcp.server.answers import HttpAnswer, RpcError, error_message
from hub.mcp.server.dispatcher import answer_each, dispatch, parse_body
from hub.mcp.server.legacy import BatchProgress
from hub.ratelimit import RateLimiter
from hub.upstream import UpstreamContext

__all__ = ["router"]

NOT_FOUND = 40400

log = logging.getLogger("hub.gateway")
router = APIRouter(tags=["gateway"], route_class=ShapedRoute)

_JSON_RPC = {"application/json": {"schema": {"type": "object"}}}
_ANSWERS = {
    "application/json": {
        "schema": {"oneOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}]}
    }
}
_MESSAGE = {
    "type": "object",
    "description": "A JSON-RPC 2.0 request, notification or response (MCP's messages)",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"type": "string", "enum": ["2.0"]},
        "id": {"type": ["string", "integer"]},
        "method": {"type": "string"},
        "params": {"type": "object"},
        "result": {"type": "object"},
        "error": {"type": "object"},
    },
}
#: What the endpoint reads itself (it takes the request, so FastAPI documents no body of it).
_MESSAGES = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {"oneOf": [_MESSAGE, {"type": "array", "items": _MESSAGE, "minItems": 1}]}
        }
    },
}


def _answer(answer: HttpAnswer) -> Response:
    headers = dict(answer.headers)
    if answer.body is None:
        return Response(status_code=answer.status, headers=headers)
    return Response(answer.encoded(), answer.status, headers, media_type="application/json")


def _answered(answer: HttpAnswer | None) -> Response:
    """The dispatch's answer; for an agent gone away (its calls cancelled), a 499 nobody reads,
    as proxies log such a request."""
    return Response(status_code=499) if answer is None else _answer(answer)


def _error(status: int, code: int, message: str, error_class: str, **headers: str) -> Response:
    error = RpcError(code, message, {"class": error_class})
    return _answer(HttpAnswer(status, error_message(None, error), headers))


def _origin_allowed(request: Request, settings: Settings) -> bool:
    origin = request.headers.get("origin")
    return origin is None or origin in settings.allowed_origins


@router.post(
    "/tenants/{t}/deployments/{d}/mcp",
    name="gateway.mcp",
    response_class=Response,
    responses={
        200: {"description": "A JSON-RPC answer (an array for a batch)", "content": _ANSWERS},
        503: {
            "description": "The database is unreachable, or the hub is stopping (JSON-RPC 50300)",
            "content": _JSON_RPC,
        },
        202: {"description": "A notification, accepted"},
        400: {"description": "A malformed or mismatched request", "content": _JSON_RPC},
        401: {"description": "No valid API key (JSON-RPC 40100)", "content": _JSON_RPC},
        403: {
            "description": "Not the deployment's agent, or a refused Origin",
            "content": _JSON_RPC,
        },
        404: {
            "description": "Unknown deployment, or an unknown method (2026-07-28)",
            "content": _JSON_RPC,
        },
        413: {"description": "The body is larger than HUB_MAX_REQUEST_BYTES", "content": _JSON_RPC},
    },
    openapi_extra={"requestBody": _MESSAGES},
)
async def mcp(
    request: Request,
    t: Annotated[str, Path(description="Tenant id or slug")],
    d: Annotated[str, Path(description="Deployment id")],
) -> Response:
    """The deployment's tools over MCP Streamable HTTP (both eras, stateless), for its agent."""
    try:
        return await _serve(request, t, d)
    except asyncio.CancelledError:
        if not cut_by_shutdown(request):
            raise
        return _answer(stopping(None, dispatched=False))  # before anything was dispatched
    except Exception as error:
        # The REST handlers answer 503 with the hub's error body; an MCP client reads JSON-RPC.
        if not database_unavailable(error):
            raise
        log.warning("gateway: database unavailable: %s", type(error).__name__)
        # each request of the body answered with its id (it was null: a client could not
        # tell which request the error answered)
        raw = getattr(request.state, "rpc_body", None)
        return _answer(answer_each(raw, unavailable_error()))


def _unauthenticated() -> Response:
    return _error(
        401,
        UNAUTHENTICATED,
        "a valid API key is required",
        "unauthenticated",
        **{"www-authenticate": "Bearer"},
    )


async def _refusal(session: AsyncSession, caller: Caller, t: str, d: str) -> Response | None:
    """404 for a path that names no deployment this caller's tenant could own; 403 for a
    caller outside any tenant. ``{t}`` is the tenant's id or its slug (DESIGN §14), as on every
    tenant route: an id is compared with the caller's tenant as it is, a slug is looked up (one
    read, only for a slug); another tenant's id or slug reads exactly like an absent one."""
    if not is_canonical_id(d) or not (is_canonical_id(t) or is_slug(t)):
        return _error(404, NOT_FOUND, "not found", "not_found")
    if caller.tenant_id is None:
        return _error(403, FORBIDDEN, "only the deployment's agent may call it", "forbidden")
    own = caller.tenant_id.value
    if (parse_id(t) if is_canonical_id(t) else await tenant_of_path(session, t)) != own:
        return _error(404, NOT_FOUND, "not found", "not_found")
    return None


async def _authenticate(
    request: Request, key: ParsedKey, session: AsyncSession, db: Database, d: str
) -> tuple[Caller, Sequence[Any] | None]:
    """The caller and, on PostgreSQL, the deployment's rows, read with the key in one round
    trip (:mod:`hub.gateway.adapters.read`); on SQLite the rows are read after (None here)."""
    if db.is_sqlite:
        return await authenticate_request(request, key, session), None
    computed = hash_key(pepper_of(request), key.full)
    deployment = parse_id(d) if is_canonical_id(d) else None
    read = await read_call(session, key.key_id, computed, deployment)
    return await admit_request_values(request, session, read.values, computed), read.rows


async def _key(request: Request, settings: Settings) -> ParsedKey | Response:
    """The request's key, or the refusal of a browser origin not allowed (DNS rebinding) or of
    a missing or malformed key (no database work for either)."""
    if not _origin_allowed(request, settings):
        return _error(403, FORBIDDEN, "Origin not allowed", "forbidden")
    try:
        return await parsed_key(request)
    except Unauthorized:
        return _unauthenticated()


async def _body(request: Request, settings: Settings) -> bytes | Response:
    """The request's body, or the JSON-RPC 413 of one sent without ``Content-Length`` that
    passed ``HUB_MAX_REQUEST_BYTES`` (a declared one is refused at the edge, in JSON-RPC too)."""
    try:
        return await request.body()
    except BodyTooLarge:
        return JSONResponse(too_large_rpc(settings.max_request_bytes), status_code=413)


async def _serve(request: Request, t: str, d: str) -> Response:
    parts = components_of(request.app)
    settings = parts.get(Settings)
    key = await _key(request, settings)
    if isinstance(key, Response):
        return key
    db = get_database(request)
    # The body is read before a database session is opened: a client that sends its body
    # slowly held a pooled connection for as long as it liked, and twenty of them (one agent's
    # key is enough) emptied a replica's pool for every tenant (stop 43). Parsed after the
    # authentication, as before: a request with a bad key is 401 whatever its body.
    body = await _body(request, settings)
    if isinstance(body, Response):
        return body
    # one read session for who calls, which deployment and the caller's policy (issue 13)
    async with db.reads() as session:
        try:
            caller, rows = await _authenticate(request, key, session, db, d)
        except Unauthorized:
            return _unauthenticated()
        try:
            raw = request.state.rpc_body = parse_body(body)
        except RpcError as error:
            return _answer(HttpAnswer(error.status, error_message(None, error)))
        refused = await _refusal(session, caller, t, d)
        tenant_id = caller.tenant_id
        if refused is not None or tenant_id is None:
            return refused or _error(403, FORBIDDEN, "no tenant", "forbidden")
        loader = parts.get(ViewLoader)
        if rows is None:
            view = await loader.load(session, tenant_id, parse_id(d))
        else:
            view = await loader.from_rows(session, tenant_id, parse_id(d), rows)
        if view is None:
            return _error(404, NOT_FOUND, "not found", "not_found")
        if view.agent_id != caller.principal_id:
            return _error(403, FORBIDDEN, "only the deployment's agent may call it", "forbidden")
        policy = await grants_service.policy_of(
            session, parts.get(PolicyCache), tenant_id, caller.principal_id, caller.grants_version
        )
    approvals_ctx = parts.get(ApprovalContext)
    public = settings.public_base_url

    def approval_url(approval_id: Any) -> str:
        return f"{public}{console_path(str(tenant_id.value), approval_id)}"

    watch = parts.get(DriftWatch) if DriftWatch in parts else None

    async def relist(server: ServerEntry) -> dict[str, str] | None:
        if watch is None or tenant_id is None:
            return None
        return await watch.relist(db, tenant_id, server.server_id)

    # the calls' audit rows are written after the answer, in the request's background (issue 14)
    audit = HubAudit(db, parts.get(Metrics), tenant_id, caller.request_id, parts.get(AuditWriter))
    host = GatewayHost(
        engine=parts.get(Gateway),
        view=view,
        decide=PolicyDecider(policy, caller.grants_version, clock.now()),
        approvals=HubApprovals(
            db,
            approvals_ctx,
            tenant_id,
            approval_url,
            approval_recheck(db, parts, caller, key, pepper_of(request), view.deployment_id),
        ),
        upstream=HubUpstream(db, parts.get(UpstreamContext), tenant_id, relist),
        audit=audit,
        limiter=parts.get(RateLimiter) if RateLimiter in parts else None,
        agent_key=str(caller.principal_id),
        states=RequestStates(
            approvals_ctx.keyring, tenant_id.value, view.deployment_id, view.agent_id
        ),
    )
    response = _answered(await _dispatched(request, host, raw))
    response.background = BackgroundTask(audited, request, audit)
    return response


async def _dispatched(request: Request, host: GatewayHost, raw: Any) -> HttpAnswer | None:
    """The dispatch's answer (None: the agent went away, its calls cancelled), or
    :func:`~hub.gateway.shutdown.stopping`'s when the end of the shutdown grace cut it short."""
    progress = BatchProgress() if isinstance(raw, list) else None
    try:
        answer = dispatch(host, raw, _headers(request), progress)
        return await unless_gone(request.receive, answer)
    except asyncio.CancelledError:
        if not cut_by_shutdown(request):
            raise
        if isinstance(raw, list) and progress is not None and progress.running >= 0:
            return cut_batch(raw, progress)
        return stopping(raw, dispatched=True)
    except Exception as error:
        # a batch whose database went away part way: what had run keeps its answer (it was
        # answered "unavailable" like the rest, a review found, stop 53: an agent would repeat
        # a call that ran); a single request is the endpoint's own 50300, in mcp()
        if not database_unavailable(error) or progress is None or progress.running < 0:
            raise
        log.warning("gateway: database unavailable in a batch: %s", type(error).__name__)
        assert isinstance(raw, list)  # noqa: S101 - progress exists for a batch only
        return cut_unavailable(raw, progress)


def _headers(request: Request) -> dict[str, str]:
    """The request's headers by lower-case name, a repeated one's values joined with ``", "``
    (RFC 9110 §5.3): a second ``Mcp-Name`` or ``MCP-Protocol-Version`` then matches neither the
    body nor a version, and is refused, instead of the last one alone being checked (a proxy
    that reads the first would see another tool than the one the hub runs)."""
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


@router.api_route(
    "/tenants/{t}/deployments/{d}/mcp",
    methods=["GET", "DELETE"],
    name="gateway.mcp_stream",
    response_class=Response,
    include_in_schema=False,
)
@refuses_its_methods  # so a PUT's 405 names POST alone
async def no_stream(t: str, d: str) -> Response:
    """Stateless in both eras: no server stream to GET and no session to DELETE."""
    return Response(status_code=405, headers={"allow": "POST"})
