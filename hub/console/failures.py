"""Audit of refused and failed console requests, as the API's (:mod:`hub.audit.failures`): a
signed-in request refused (403: a grant, a CSRF token) is recorded ``denied``, any other error of
a POST ``failed``, under the action of the API route doing the same thing; reads failing otherwise
(404) and rate-limit refusals are not recorded. Requests without a session have no actor and are
not recorded either."""

from __future__ import annotations

from fastapi import Request

from hub.audit.actions import Action
from hub.audit.service import record_failure
from hub.auth.caller import Caller
from hub.core.deps import get_database
from hub.core.errors import Forbidden, HubError, RateLimited

__all__ = ["ACTIONS", "audit_refusal"]

#: each console route's name → the action of the API route doing the same
ACTIONS: dict[str, Action] = {
    "console.logout": Action.CONSOLE_SIGN_OUT,
    "console.approvals": Action.APPROVAL_LIST,
    "console.approvals_queue": Action.APPROVAL_LIST,
    "console.approval": Action.APPROVAL_GET,
    "console.approval_decide": Action.APPROVAL_DECIDE,
    "console.deployments": Action.DEPLOYMENT_LIST,
    "console.deployment": Action.DEPLOYMENT_GET,
    "console.servers": Action.SERVER_LIST,
    "console.server": Action.SERVER_GET,
    "console.catalog": Action.CATALOG_GET,
    "console.catalog_diff": Action.CATALOG_DIFF,
    "console.server_oauth": Action.OAUTH_AUTHORIZE,
    "console.grants": Action.GRANT_LIST,
    "console.grant_check": Action.GRANT_CHECK,
    "console.grant_create": Action.GRANT_CREATE,
    "console.grant_delete": Action.GRANT_DELETE,
    "console.credentials": Action.CREDENTIAL_LIST,
    "console.credential_create": Action.CREDENTIAL_CREATE,
    "console.credential_secret": Action.CREDENTIAL_UPDATE,
    "console.credential_oauth": Action.OAUTH_AUTHORIZE,
    "console.audit": Action.AUDIT_LIST,
    "console.audit_verify": Action.AUDIT_VERIFY,
}


async def audit_refusal(
    request: Request, caller: Caller | None, request_id: str, error: HubError
) -> None:
    if caller is None or isinstance(error, RateLimited):
        return
    denied = isinstance(error, Forbidden)
    if not denied and request.method != "POST":
        return
    name = getattr(request.scope.get("route"), "name", None) or ""
    await record_failure(
        get_database(request),
        tenant_id=caller.tenant_id,
        actor_id=caller.principal_id,
        action=ACTIONS.get(name, Action.REQUEST),
        resource=request.url.path,
        request_id=request_id,
        outcome="denied" if denied else "failed",
        details={
            "method": request.method,
            "status": error.status_code,
            "code": error.code,
            "via": "console",
        },
    )
