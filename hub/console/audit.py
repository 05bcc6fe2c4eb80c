"""The audit pages: the tenant's trail, newest first (what a person looking wants; "Older
events" pages back), filtered by action, actor (a name or an id), outcome and a time range, a
page at a time, each actor shown by name; and the hash chain's verification (DESIGN §11, §14).
Both need ``audit`` : ``read``, as the API does; neither writes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, get_args

from fastapi import Query
from starlette.responses import Response

from hub.audit import service
from hub.audit.actions import Action, Outcome
from hub.audit.schemas import AuditEventRead, AuditVerifyRead
from hub.console.names import principal_names
from hub.console.routing import console_router
from hub.console.web import TenantConsole, TenantConsoleDep, render
from hub.core.deps import DatabaseDep
from hub.core.errors import BadRequest
from hub.core.pagination import PageParams, decode_cursor
from hub.principals import service as principals

__all__ = ["router"]

router = console_router("/t/{t}/audit")

LIMIT = 50
OUTCOMES: tuple[str, ...] = get_args(Outcome)
ACTIONS = sorted(a.value for a in Action)


def _time(raw: str | None, name: str) -> datetime | None:
    """A ``datetime-local`` value (read as UTC) or an ISO time with an offset."""
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise BadRequest(f"{name} is not a time") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _filters(
    action: str | None,
    actor_id: uuid.UUID | None,
    outcome: str | None,
    since: str | None,
    until: str | None,
) -> service.AuditFilters:
    if action and action not in ACTIONS:
        raise BadRequest("unknown action")
    if outcome and outcome not in OUTCOMES:
        raise BadRequest("unknown outcome")
    return service.AuditFilters(
        action=action or None,
        actor_id=actor_id,
        outcome=outcome or None,
        since=_time(since, "since"),
        until=_time(until, "until"),
    )


Text = Annotated[str | None, Query(max_length=64)]


async def _actor(page: TenantConsole, actor: str | None) -> tuple[uuid.UUID | None, str | None]:
    """The actor filter (a principal's id, or a name naming exactly one of the tenant's or a
    platform admin), or why it matches no event: shown on the page, the other filters kept."""
    actor = (actor or "").strip()
    if not actor:
        return None, None
    try:
        return uuid.UUID(actor), None
    except ValueError:
        pass
    found = await principals.actor_ids_named(page.session, page.access.tenant_id, actor)
    if len(found) == 1:
        return found[0], None
    if found:
        return None, f"Several principals are named {actor!r}: give the id."
    return None, f"No principal is named {actor!r}."


@router.get("", name="console.audit")
async def audit(
    page: TenantConsoleDep,
    action: Text = None,
    actor: Text = None,
    outcome: Text = None,
    since: Text = None,
    until: Text = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response:
    await page.require("audit", "read")
    actor_id, unmatched = await _actor(page, actor)
    filters = _filters(action, actor_id, outcome, since, until)
    params = PageParams(LIMIT, decode_cursor(cursor) if cursor else None)
    items: list[AuditEventRead] = []
    next_cursor = None
    if unmatched is None:
        result = await service.list_events(
            page.session, page.access.tenant_id, filters, params, newest_first=True
        )
        items = [AuditEventRead.model_validate(e) for e in result.items]
        next_cursor = result.next_cursor
    query = {
        "action": action or "",
        "actor": actor or "",
        "outcome": outcome or "",
        "since": since or "",
        "until": until or "",
    }
    names = await principal_names(page, (e.actor_id for e in items if e.actor_id))
    return render(
        page,
        page.request,
        "audit/list.html",
        items=items,
        names=names,
        next_cursor=next_cursor,
        query=query,
        actions=ACTIONS,
        outcomes=OUTCOMES,
        unmatched=unmatched,
    )


@router.get("/verify", name="console.audit_verify")
async def verify(page: TenantConsoleDep, db: DatabaseDep) -> Response:
    await page.require("audit", "read")
    result = await service.verify_chain(db, page.access.tenant_id)
    read = AuditVerifyRead(
        ok=result.ok,
        checked=result.checked,
        first_bad_id=result.first_bad_id,
        reason=result.reason,
        head_hash=result.head_hash,
        head_seq=result.head_seq,
    )
    return render(page, page.request, "audit/verify.html", result=read)
