"""The upstream port: the server's credential, decrypted in process, and ``tools/call``.

The target is resolved as discovery resolves it (:func:`hub.upstream.resolve_target`: the pin is
the origin of the credential's ``api_base_url``, or the URL's own with none or the keyless
sentinel) in a short read session, closed before any outbound request. The call goes through
:func:`hub.upstream.tokens.with_fresh_credential` (an OAuth token due is refreshed first; an
upstream 401 gets one refresh and one retry). The secret exists only inside that call, and the
engine's shaping (redaction first) runs there too, so what leaves this port never holds it.
A handshake-era server's session is kept for the next call of the same deployment, agent and
server (``reuse``; :mod:`hub.mcp.client.keeper`), so such a call costs one request, not four.
Failures become :class:`~hub.gateway.engine.ports.UpstreamFailure` with the egress or MCP
reason, never text.

An upstream ``-32020`` (the server says the tool changed) re-lists the server at once through the
drift watch (DESIGN §15): if the tool's live hash differs from its pin, the tool is marked drifted
and the call fails ``tool_changed``; otherwise (unchanged, or the re-list did not complete) the call
is retried once, and a second ``-32020`` is ``upstream_failed`` ``tool_changed_unconfirmed``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from hub.core.db import Database
from hub.core.errors import HubError
from hub.core.tenancy import TenantId
from hub.credentials.exceptions import CredentialUnusable
from hub.egress import EgressError
from hub.gateway.engine.model import DeploymentView, ServerEntry, ToolEntry
from hub.gateway.engine.ports import Shaper, UpstreamFailure, UpstreamResult
from hub.gateway.engine.tool_change import retrying_tool_change
from hub.mcp import McpError, era_from_hint
from hub.mcp.redaction import upstream_message
from hub.upstream import Target, UpstreamContext, resolve_keyless, resolve_target
from hub.upstream.tokens import InsufficientScope, TokenUnavailable, with_fresh_credential

__all__ = ["HubUpstream", "Relist"]

#: re-list a server now: its live ``{tool name: sha256}``, or None when that did not complete
Relist = Callable[[ServerEntry], Awaitable[Mapping[str, str] | None]]


class HubUpstream:
    def __init__(
        self,
        db: Database,
        ctx: UpstreamContext,
        tenant_id: TenantId,
        relist: Relist | None = None,
    ) -> None:
        self._db = db
        self._ctx = ctx
        self._tenant = tenant_id
        self._relist = relist

    async def _target(self, server: ServerEntry) -> Target:
        try:
            if server.credential_id is None:  # nothing to read: no session at all
                return resolve_keyless(self._ctx, server.url)
            async with self._db.reads() as session:
                return await resolve_target(
                    session, self._ctx, self._tenant, server.url, server.credential_id
                )
        except HubError as exc:  # unusable credential (404), URL off its pin (422)
            reason = exc.extra.get("reason")
            raise UpstreamFailure(
                reason if isinstance(reason, str) else "credential_unavailable"
            ) from None

    async def call(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        shape: Shaper,
    ) -> UpstreamResult:
        async def changed() -> bool:
            if self._relist is None:
                return True  # nothing to re-list with: the server's word stands
            live = await self._relist(server)
            return live is not None and live.get(tool.name) != tool.sha256

        return await retrying_tool_change(
            lambda: self._call_once(view, server, tool, arguments, shape), changed
        )

    async def _call_once(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        shape: Shaper,
    ) -> UpstreamResult:
        target = await self._target(server)
        started = time.perf_counter()

        async def run(bearer: str | None) -> dict[str, Any]:
            secrets = [bearer] if bearer else []
            try:
                done = await self._ctx.client.call_tool(
                    target.url,
                    tool.name,
                    dict(arguments),
                    pin=target.pin,
                    bearer=bearer,
                    deadline_s=self._ctx.call_deadline_s,
                    tool=tool.tool,
                    era_hint=era_from_hint(server.era),
                    scope=str(self._tenant),
                    reuse=f"{view.deployment_id}/{view.agent_id}/{server.server_id}",
                )
            except McpError as exc:
                if exc.reason != "tool_error":
                    raise  # no upstream text inside; a 401 gets its one refresh and retry
                text = exc.upstream_message
                message = upstream_message(text, secrets) if text else None
                raise _failure(exc.reason, started, exc.code, message) from None
            return await shape(done.result, secrets)

        try:
            result = await with_fresh_credential(self._ctx, self._db, self._tenant, target, run)
        except (McpError, EgressError) as exc:
            raise _failure(exc.reason, started) from None
        except (TokenUnavailable, InsufficientScope) as exc:
            raise _failure(exc.reason, started) from None
        except CredentialUnusable:
            raise UpstreamFailure("credential_unavailable") from None
        finally:
            elapsed = time.perf_counter() - started
            self._ctx.metrics.upstream.labels(operation="tool_call").observe(elapsed)
        return UpstreamResult(result, (time.perf_counter() - started) * 1000)


def _failure(
    reason: str, started: float, code: int | None = None, message: str | None = None
) -> UpstreamFailure:
    upstream_ms = (time.perf_counter() - started) * 1000
    if reason == "input_required":
        reason = "input_required_unsupported"
    return UpstreamFailure(reason, upstream_ms=upstream_ms, code=code, message=message)
