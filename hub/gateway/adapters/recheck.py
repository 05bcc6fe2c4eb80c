"""What allowed an ``ask`` call, read again once a person approved it during its wait.

A call that waits for a decision (``HUB_APPROVAL_WAIT_S``, up to 300 s) was decided on what its
request read when it arrived: the key, the principal and tenant, the grants, the deployment's
entries and the tools' drift marks. Any of them could change during the wait, and the call then
ran on the old state once approved: a revoked key, a deleted agent, a grant turned ``deny``, an
entry removed or a tool drifted under ``HUB_DRIFT_POLICY=deny`` (a two-replica walk, stop 53).
:func:`approval_recheck` reads them again, as a new request would, before the approval is used.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import Awaitable, Callable

from hub.auth.caller import Caller
from hub.auth.key_format import ParsedKey
from hub.auth.service import authenticate
from hub.core import clock
from hub.core.components import Components
from hub.core.db import Database
from hub.core.errors import Unauthorized
from hub.gateway.adapters.decide import PolicyDecider
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.engine.engine import Gateway
from hub.gateway.engine.model import ToolEntry
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache

__all__ = ["Recheck", "approval_recheck", "bound_sha256"]

#: ``await recheck(tool)``: whether the call of ``tool`` may still run on what is stored now
Recheck = Callable[[ToolEntry], Awaitable[bool]]


def bound_sha256(tool: ToolEntry) -> str:
    """The hash an approval binds: the live definition's for a drifted tool (DESIGN §15), so a
    person approves what the server serves now, and a further change asks again."""
    if tool.drifted and tool.drift and isinstance(tool.drift.get("to_sha256"), str):
        return str(tool.drift["to_sha256"])
    return tool.sha256


def approval_recheck(
    db: Database,
    parts: Components,
    caller: Caller,
    key: ParsedKey,
    pepper: bytes,
    deployment_id: uuid.UUID,
) -> Recheck:
    """A :data:`Recheck` for one request's calls: the key authenticates again (revoked, expired,
    a principal or tenant disabled: no), as the deployment's agent in the caller's tenant; the
    deployment still lists the tool under the same name, grant key and bound hash; and its
    effect is not ``deny`` now (grants and drift as stored now)."""
    engine, views, policies = parts.get(Gateway), parts.get(ViewLoader), parts.get(PolicyCache)
    tenant_id, request_id = caller.tenant_id, caller.request_id

    async def still_allowed(tool: ToolEntry) -> bool:
        async with db.reads() as session:
            try:
                now_caller = await authenticate(session, pepper, key, request_id)
            except Unauthorized:
                return False
            if tenant_id is None or now_caller.tenant_id != tenant_id:
                return False
            view = await views.load(session, tenant_id, deployment_id)
            if view is None or view.agent_id != now_caller.principal_id:
                return False
            now = view.tools.get(tool.wire_name)
            if now is None or now.grant_key != tool.grant_key:
                return False
            if bound_sha256(now) != bound_sha256(tool):
                return False
            version = now_caller.grants_version
            policy = await grants_service.policy_of(
                session, policies, tenant_id, now_caller.principal_id, version
            )
        decider = PolicyDecider(policy, version, clock.now())
        return engine.decide(now, decider) != "deny"

    async def recheck(tool: ToolEntry) -> bool:
        # in a context of its own: authenticating sets the request's row-level scope and log
        # context, which the rest of the request keeps as it was
        context = contextvars.copy_context()
        return await asyncio.create_task(still_allowed(tool), context=context)

    return recheck
