"""The upstream port of a direct-mode call (DESIGN §10.5, §15): the leased secret, the hub's code.

One ``tools/call`` through the lease's MCP client (the hub's egress fetcher under the lease's
egress policy and pin), shaped by the engine while the secret is in hand. As on the hub:

- an upstream **401** on a renewable (OAuth) lease gets one refresh and one retry: a new lease
  naming the refused secret's fingerprint, which the hub renews if it is still current;
- an upstream **403** ``insufficient_scope`` on an OAuth lease is reported to the hub (``POST
  …/credentials/{c}/challenges``), which records the challenge's scopes on the credential for a
  step-up; the call fails ``insufficient_scope``;
- an upstream **-32020** (the tool changed) has the hub re-list the server at once
  (``POST …/decisions/{id}/relist``): changed → ``tool_changed`` (the tool is now marked drifted
  for every host); unchanged or not known → one retry, and a second ``-32020`` is
  ``upstream_failed`` ``tool_changed_unconfirmed``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hub.core.logging import redacting
from hub.egress import EgressError, Fetcher
from hub.gateway.engine.model import DeploymentView, ServerEntry, ToolEntry
from hub.gateway.engine.ports import Shaper, UpstreamFailure, UpstreamResult
from hub.gateway.engine.tool_change import retrying_tool_change
from hub.mcp import Era, McpClient, McpError, era_from_hint
from hub.mcp.redaction import upstream_message
from hub.sidecar.errors import HubRefused, HubUnreachable

__all__ = ["Calls", "Lease", "LeasedUpstream"]

log = logging.getLogger("hub.sidecar")


@dataclass
class Lease:
    credential_id: uuid.UUID
    secret: str | None
    origin: str
    expires_at: float  # monotonic seconds
    client: McpClient
    fetcher: Fetcher
    fingerprint: str | None = None  # the hub's, to name this secret if the upstream refuses it
    renewable: bool = False  # an OAuth token: on a 401 the hub may renew it
    version: int | None = None  # the credential's version leased (a newer one: lease again)

    def __repr__(self) -> str:  # never the secret
        return f"Lease({self.credential_id}, origin={self.origin!r})"


class Calls(Protocol):
    """What the port needs of :class:`~hub.sidecar.direct.DirectCalls`."""

    eras: dict[str, Era]

    async def lease(
        self, credential_id: uuid.UUID, refused: Lease | None = None, *, version: int | None = None
    ) -> Lease: ...

    async def relist(self, decision_id: str) -> bool | None: ...

    async def challenged(self, lease: Lease, scopes: tuple[str, ...]) -> None: ...


class LeasedUpstream:
    """The upstream port of one direct-mode call: the leased credential through the hub's
    egress fetcher and MCP client."""

    def __init__(
        self,
        calls: Calls,
        decision_id: str,
        deadline_s: float,
        credential_version: int | None = None,
    ) -> None:
        self._calls = calls
        self._decision_id = decision_id
        self._deadline_s = deadline_s  # the hub's HUB_TOOL_CALL_TIMEOUT_S, from the decision
        self._version = credential_version  # the credential's, as the decision read it

    async def call(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        shape: Shaper,
    ) -> UpstreamResult:
        """The call; on a ``-32020`` the hub re-lists the server and says whether the tool
        changed (:func:`~hub.gateway.engine.tool_change.retrying_tool_change`)."""
        return await retrying_tool_change(
            lambda: self._call_once(view, server, tool, arguments, shape),
            lambda: self._calls.relist(self._decision_id),
        )

    async def _call_once(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        shape: Shaper,
    ) -> UpstreamResult:
        credential_id = server.credential_id
        assert credential_id is not None  # noqa: S101
        started = time.perf_counter()
        lease = await self._leased(credential_id)
        try:
            shaped = await self._once(view, server, tool, arguments, shape, lease, started)
        except _Unauthorized as refused:
            # one refresh and one retry, as the hub's own calls on a 401 (DESIGN §9)
            if not lease.renewable:
                raise refused.failure from None
            renewed = await self._leased(credential_id, lease)
            if renewed.fingerprint == lease.fingerprint:
                raise refused.failure from None  # the same secret: nothing to retry with
            try:
                shaped = await self._once(view, server, tool, arguments, shape, renewed, started)
            except _Unauthorized as again:
                raise again.failure from None
        return UpstreamResult(shaped, (time.perf_counter() - started) * 1000)

    async def _leased(self, credential_id: uuid.UUID, refused: Lease | None = None) -> Lease:
        try:
            return await self._calls.lease(credential_id, refused, version=self._version)
        except (HubRefused, HubUnreachable) as exc:
            log.warning("sidecar: no lease: %s", exc)
            raise UpstreamFailure("credential_unavailable") from None

    async def _once(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        shape: Shaper,
        lease: Lease,
        started: float,
    ) -> dict[str, Any]:
        """One ``tools/call`` with ``lease``'s secret, shaped; :class:`_Unauthorized` on a 401."""
        secrets = [lease.secret] if lease.secret else []
        with redacting(*secrets):
            try:
                done = await lease.client.call_tool(
                    server.url,
                    tool.name,
                    dict(arguments),
                    pin=lease.origin,
                    bearer=lease.secret,
                    deadline_s=self._deadline_s,
                    tool=tool.tool,
                    era_hint=self._calls.eras.get(server.url) or era_from_hint(server.era),
                    scope=str(view.tenant_id),
                    reuse=f"{view.deployment_id}/{view.agent_id}/{server.server_id}",
                )
                self._calls.eras[server.url] = done.era
            except McpError as exc:
                ms = (time.perf_counter() - started) * 1000
                message = exc.upstream_message if exc.reason == "tool_error" else None
                if message:
                    message = upstream_message(message, secrets)
                reason = (
                    "input_required_unsupported" if exc.reason == "input_required" else exc.reason
                )
                failure = UpstreamFailure(reason, upstream_ms=ms, code=exc.code, message=message)
                challenge = exc.challenge
                if (
                    exc.status == 403
                    and challenge is not None
                    and challenge.insufficient_scope
                    and lease.renewable
                ):  # as the hub's own calls: the scopes recorded for a step-up (DESIGN §9)
                    await self._calls.challenged(lease, challenge.scopes)
                    raise UpstreamFailure("insufficient_scope", upstream_ms=ms) from None
                if exc.reason == "unauthorized" and exc.status == 401:
                    raise _Unauthorized(failure) from None
                raise failure from None
            except EgressError as exc:
                ms = (time.perf_counter() - started) * 1000
                raise UpstreamFailure(exc.reason, upstream_ms=ms) from None
            return await shape(done.result, secrets)


class _Unauthorized(Exception):
    """The upstream answered the leased secret 401 (``failure`` if it stays so)."""

    def __init__(self, failure: UpstreamFailure) -> None:
        super().__init__(failure.reason)
        self.failure = failure
