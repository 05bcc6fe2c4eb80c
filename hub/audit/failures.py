"""Audit of denied and failed requests (DESIGN §13 "Audit").

Installed as a failure hook on the app: when a request by an authenticated caller ends in an error,
its transaction has already rolled back; this records one event with outcome ``denied`` (403) or
``failed`` (any other error of a mutating request) in a fresh short transaction. Reads that fail
for other reasons (e.g. 404) are not audited, and neither are requests refused by a rate limit
(429): a flood would otherwise turn into as many database writes (they are counted in a metric).
The row's action is the route's name, one of the closed vocabulary (:mod:`hub.audit.actions`).

A credential lease (the sidecar's secret, DESIGN §10.5, §15) is refused with 404 as often as with
403 — an unknown deployment, another tenant's ids, an unusable credential — and every refusal of
it is a ``denied`` row: someone asked for a secret and was not given it.
"""

from __future__ import annotations

from fastapi import Request

from hub.audit.actions import Action, action_of_route
from hub.audit.service import record_failure
from hub.auth.caller import Caller
from hub.core.deps import get_database
from hub.core.errors import Forbidden, HubError, NotFound, RateLimited

__all__ = ["audit_failed_request"]

_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: routes whose 404 refusals are ``denied`` too
_NOT_FOUND_DENIED = frozenset({Action.CREDENTIAL_LEASE})


async def audit_failed_request(request: Request, exc: Exception) -> None:
    caller: Caller | None = getattr(request.state, "caller", None)
    if caller is None or isinstance(exc, RateLimited):
        return
    route = request.scope.get("route")
    action = action_of_route(getattr(route, "name", None))
    denied = isinstance(exc, Forbidden) or (
        isinstance(exc, NotFound) and action in _NOT_FOUND_DENIED
    )
    if not denied and request.method not in _MUTATING:
        return
    details: dict[str, object] = {"method": request.method}
    if isinstance(exc, HubError):
        details["status"] = exc.status_code
        details["code"] = exc.code
        reason = exc.extra.get("reason")
        if isinstance(reason, str):
            details["reason"] = reason
    await record_failure(
        get_database(request),
        tenant_id=caller.tenant_id,
        actor_id=caller.principal_id,
        action=action,
        resource=request.url.path,
        request_id=caller.request_id,
        outcome="denied" if denied else "failed",
        details=details,
    )
