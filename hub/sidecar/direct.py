"""Direct mode (DESIGN §10.5, §15): the hub decides, the sidecar calls the server itself.

For a tool of a direct-mode entry (with a credential), one call is:

1. ``POST …/decisions`` with the agent's key: the hub validates, decides and handles the
   approval. A refusal (its JSON-RPC ``error``) or a result not to run (``invalid_arguments``,
   ``approval_pending``, or ``input_required`` for a client that can be sent to the approval's
   page) is the answer, as the endpoint would give it.
2. A lease of the entry's credential with ``HUB_SIDECAR_KEY`` (the deployment's sidecar
   principal; never the agent's key), kept in memory until its ``expires_at`` (minus a margin),
   then discarded.
3. The engine's own call path (:class:`~hub.gateway.engine.engine.Gateway`) with the hub's
   decision as its decide and approval ports, and as its upstream port the hub's egress fetcher
   and MCP client under the **lease's** egress policy (loopback, CIDRs, extra origins) and pin —
   so validation, redaction, the size bound and error shaping are the hub's code. An upstream 401
   on a renewable (OAuth) lease gets one refresh and one retry, as the hub's own calls do: a new
   lease naming the refused secret's fingerprint, which the hub renews if it is still current;
   an upstream ``-32020`` has the hub re-list the server (:mod:`hub.sidecar.leased`).
4. ``POST …/decisions/{id}/outcome``: the call's audit row, written by the hub — sent beside the
   answer rather than before it, one at a time, and sent again until the hub takes it or the
   decision expires (:mod:`hub.sidecar.reports`; at exit, reports still pending get
   ``REPORT_WAIT_S``, and each one left is logged at ERROR).

The bundle names the era the hub last reached each direct-mode upstream in (its server row's),
so a call does not probe for it; an upstream the hub never reached is probed on the first call,
and the era each upstream answered in is remembered from then on. A handshake-era upstream's
session is kept between calls, as the hub keeps it (:mod:`hub.mcp.client.keeper`;
``SESSION_IDLE_S``), across lease renewals too: the key holds the leased secret, so a different
secret opens a new session.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import math
import time
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub import __version__
from hub.egress import EgressConfig, Fetcher
from hub.gateway.engine.engine import Gateway
from hub.gateway.engine.errors import RATE_LIMITED, UNAUTHENTICATED
from hub.gateway.engine.model import Effect, ToolEntry
from hub.gateway.engine.ports import (
    ApprovalOutcome,
    CallRecord,
)
from hub.mcp import Era, McpClient, SessionKeeper
from hub.mcp.server.messages import INVALID_REQUEST
from hub.sidecar.asking import Asking
from hub.sidecar.bundle import Bundle
from hub.sidecar.config import SidecarConfig
from hub.sidecar.errors import HubRefused, HubUnreachable
from hub.sidecar.hubclient import HubClient
from hub.sidecar.leased import Lease, LeasedUpstream
from hub.sidecar.relay import RelayError, unavailable
from hub.sidecar.reports import OutcomeReports

__all__ = ["DirectCalls", "Lease"]

log = logging.getLogger("hub.sidecar")

LEASE_MARGIN_S = 15.0
REPORT_WAIT_S = 10.0
CLIENT_INFO = {"name": "mcp-hub-sidecar", "version": __version__}
SESSION_IDLE_S = 60.0  # as the hub's HUB_UPSTREAM_SESSION_IDLE_S default


def _bound(value: object) -> float | None:
    """A bound the hub sent with its decision, or None (an older hub sends none: the
    sidecar's own apply)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _egress(data: Mapping[str, Any], origin: str, call_timeout_s: float) -> EgressConfig:
    """The lease's egress policy: where the secret may go, and the hub's byte caps and
    per-origin slots (an older hub sends none of those: the fetcher's defaults apply)."""
    found = data.get("egress")
    egress: dict[str, Any] = found if isinstance(found, dict) else {}
    cidrs = tuple(ipaddress.ip_network(str(c), strict=False) for c in egress.get("allow_cidrs", []))
    extra = tuple(str(o) for o in egress.get("extra_origins", []))

    def hubs(name: str, default: int) -> int:
        value = _bound(egress.get(name))
        return int(value) if value is not None else default

    return EgressConfig(
        allow_loopback=bool(egress.get("allow_loopback", False)),
        allow_cidrs=cidrs,
        extra_origins={origin: extra} if extra else {},
        tool_call_timeout_s=call_timeout_s,
        max_response_bytes=hubs("max_response_bytes", EgressConfig.max_response_bytes),
        max_operation_bytes=hubs("max_operation_bytes", EgressConfig.max_operation_bytes),
        max_per_origin=hubs("max_per_origin", EgressConfig.max_per_origin),
        max_per_tenant_origin=hubs("max_per_tenant_origin", EgressConfig.max_per_tenant_origin),
    )


def _refused_decision(refused: HubRefused) -> dict[str, Any]:
    """The hub's refusal of a decision, as relay mode passes on the endpoint's refusal of the
    same call (:class:`RelayError`); any other refusal fails the call closed (it did not run)."""
    if refused.status == 401:  # the endpoint's 40100 (hub.gateway.endpoint)
        raise RelayError(
            UNAUTHENTICATED, "a valid API key is required", {"class": "unauthenticated"}
        )
    if refused.status == 413:  # the endpoint's -32600 (hub.core.middleware.too_large_rpc)
        limit = refused.fields.get("max_bytes")
        if isinstance(limit, int) and not isinstance(limit, bool):
            message = f"the request is larger than this hub accepts ({limit} bytes)"
            raise RelayError(INVALID_REQUEST, message, {"max_bytes": limit})
        raise RelayError(INVALID_REQUEST, "the request is larger than this hub accepts", {})
    if refused.status == 429:  # the endpoint's 42900 (hub.gateway.host.tool_call_refusal)
        retry = max(1, math.ceil(refused.retry_after_s or 1))
        raise RelayError(
            RATE_LIMITED,
            f"Too many tool calls: try again in {retry} s",
            {"class": "rate_limited", "retry_after_s": retry},
        )
    return unavailable(str(refused), reason="hub_refused")


class _HubDecision:
    """The decide and approval ports: what the hub answered for this one call."""

    def __init__(self, tool: ToolEntry, effect: Effect, approval_id: uuid.UUID | None) -> None:
        self._key = tool.grant_key
        self._effect = effect
        self._approval = approval_id or uuid.UUID(int=0)

    @property
    def grants_version(self) -> int:
        return 0

    def grant_effect(self, grant_key: str) -> Effect:
        return self._effect if grant_key == self._key else "deny"

    async def resolve(self, *_: Any) -> ApprovalOutcome:
        return ApprovalOutcome("approved", self._approval)  # the hub consumed it for this call


class _Record:
    """The audit port: keeps the engine's record for the outcome report."""

    def __init__(self) -> None:
        self.kept: CallRecord | None = None

    async def record(self, record: CallRecord) -> None:
        self.kept = record


class DirectCalls:
    """Direct mode's calls for one sidecar: leases, their clients, and the hub's decisions."""

    def __init__(
        self,
        config: SidecarConfig,
        agent_hub: HubClient,
        sidecar_hub: HubClient,
        engine: Gateway | None = None,
    ) -> None:
        self._config = config
        self._agent = agent_hub
        self._sidecar = sidecar_hub
        self._engine = engine or Gateway()
        self._leases: dict[uuid.UUID, Lease] = {}
        self._lease_locks: dict[uuid.UUID, asyncio.Lock] = {}
        self.eras: dict[str, Era] = {}  # per upstream URL, once a call has found it out
        self.keeper = SessionKeeper(idle_s=SESSION_IDLE_S)  # shared by every lease's client
        self.reports = OutcomeReports(
            agent_hub, lambda d: f"{config.deployment_path}/decisions/{d}/outcome"
        )
        self._closing: dict[asyncio.Task[None], Lease] = {}  # replaced leases, closed later

    def _close_later(self, lease: Lease) -> None:
        """Close a replaced lease's client once every call that may hold it has had its
        deadline; its secret goes with it."""

        async def close() -> None:
            await asyncio.sleep(self._config.call_timeout_s)
            await lease.fetcher.aclose()

        task = asyncio.create_task(close())
        self._closing[task] = lease
        task.add_done_callback(lambda done: self._closing.pop(done, None))

    async def aclose(self) -> None:
        await self.reports.aclose(REPORT_WAIT_S)  # outcomes still on their way: a bounded wait
        for task, replaced in list(self._closing.items()):  # at exit, replaced leases close now
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await replaced.fetcher.aclose()
        for lease in self._leases.values():
            await lease.fetcher.aclose()
        self._leases.clear()

    async def discard_expired(self) -> None:
        """Drop every lease past its ``expires_at``: the secret leaves memory with its client."""
        now = time.monotonic()
        for credential_id, lease in list(self._leases.items()):
            if lease.expires_at <= now:
                del self._leases[credential_id]
                await lease.fetcher.aclose()
                log.info("sidecar: lease of credential %s expired; discarded", credential_id)

    async def expire_loop(self, every_s: float = 5.0) -> None:
        while True:
            await asyncio.sleep(every_s)
            await self.discard_expired()

    def handles(self, bundle: Bundle, tool: ToolEntry | None) -> bool:
        if tool is None:
            return False
        server = bundle.view.servers.get(tool.handle)
        return server is not None and server.mode == "direct" and server.credential_id is not None

    async def lease(
        self, credential_id: uuid.UUID, refused: Lease | None = None, *, version: int | None = None
    ) -> Lease:
        """The live lease of ``credential_id``; a new one when ``refused`` (whose secret the
        upstream answered 401) is still the one held: the hub is told, and renews an OAuth token
        that is still current before it leases it again. A new one too when the held lease is
        of a version older than ``version`` (the decision's): the secret was rotated since, and
        the old one is not used for the rest of the lease's time."""
        # one lease request at a time per credential: concurrent calls share the one it brings
        # (else the second would replace the first and leave its connection pool open)
        async with self._lease_locks.setdefault(credential_id, asyncio.Lock()):
            return await self._lease_locked(credential_id, refused, version)

    async def _lease_locked(
        self, credential_id: uuid.UUID, refused: Lease | None, version: int | None
    ) -> Lease:
        held = self._leases.get(credential_id)
        live = held is not None and held.expires_at - LEASE_MARGIN_S > time.monotonic()
        if held is not None and live and held is not refused:
            older = held.version is not None and version is not None and held.version < version
            if not older:
                return held
        body: dict[str, Any] = {"deployment_id": self._config.deployment}
        if held is not None:
            del self._leases[credential_id]
            if live:  # refused or stale: calls may still be using its client; close it after them
                if held is refused:
                    body["refused_fingerprint"] = held.fingerprint
                self._close_later(held)
            else:  # expired: the secret is discarded
                await held.fetcher.aclose()
        data = await self._sidecar.post(
            f"/tenants/{self._config.tenant}/credentials/{credential_id}/lease",
            {k: v for k, v in body.items() if v is not None},
        )
        expires = datetime.fromisoformat(str(data["expires_at"]))
        left = expires.timestamp() - time.time()
        origin = str(data["origin"])
        fetcher = Fetcher(_egress(data, origin, self._config.call_timeout_s))
        secret = data.get("secret")
        lease = Lease(
            credential_id,
            str(secret) if secret else None,
            origin,
            time.monotonic() + max(0.0, left),
            McpClient(fetcher, client_info=CLIENT_INFO, keeper=self.keeper),
            fetcher,
            str(data["fingerprint"]) if data.get("fingerprint") else None,
            data.get("renewable") is True,
            data["version"] if isinstance(data.get("version"), int) else None,
        )
        log.info("sidecar: leased credential %s (%s)", credential_id, data.get("fingerprint"))
        self._leases[credential_id] = lease
        return lease

    async def call(
        self,
        bundle: Bundle,
        tool: ToolEntry | None,
        name: str,
        arguments: Any,
        asking: Asking | None = None,
    ) -> dict[str, Any]:
        """The call's result; with ``asking``, a pending call may be the hub's ``input_required``
        (:mod:`hub.sidecar.asking`)."""
        assert tool is not None  # noqa: S101 - handles() said so
        path = f"{self._config.deployment_path}/decisions"
        body: dict[str, Any] = {"wire_name": name, "arguments": arguments}
        if asking is not None:
            body["url_elicitation"] = asking.for_decision()
        decided_at = time.monotonic()
        try:
            decision = await self._agent.post(path, body)
        except HubRefused as refused:
            return _refused_decision(refused)
        except HubUnreachable as exc:  # the sidecar runs the call: without a decision it did not
            return unavailable(str(exc))
        error = decision.get("error")
        if isinstance(error, dict):
            raise RelayError(
                int(error.get("code", -32603)), str(error.get("message")), error.get("data")
            )
        if isinstance(decision.get("result"), dict):
            result: dict[str, Any] = decision["result"]
            return result
        decision_id = str(decision.get("decision_id"))
        effect: Effect = decision.get("effect") or "deny"
        ports = _HubDecision(tool, effect, None)
        deadline = _bound(decision.get("call_timeout_s"))
        cap = _bound(decision.get("max_result_bytes"))
        version = decision.get("credential_version")
        upstream = LeasedUpstream(
            self,
            decision_id,
            deadline or self._config.call_timeout_s,
            version if isinstance(version, int) else None,
        )
        audit = _Record()
        try:
            outcome = await self._engine.call(
                bundle.view,
                name,
                arguments,
                decide=ports,
                approvals=ports,
                upstream=upstream,
                audit=audit,
                legacy=False,
                max_result_bytes=int(cap) if cap else None,
            )
        finally:  # a call cancelled (its agent gone) is reported too: failed, reason cancelled
            self._report(decision_id, audit.kept, decided_at)  # the answer need not wait for it
        if outcome.failure is not None:
            failure = outcome.failure
            raise RelayError(failure.code, failure.message, dict(failure.data))
        assert outcome.result is not None  # noqa: S101
        return outcome.result

    async def relist(self, decision_id: str) -> bool | None:
        """The server of this decision's tool answered ``-32020``: the hub re-lists it now. True
        when the tool changed (the hub marked it drifted), False when it did not (retry once),
        None when that is not known."""
        try:
            answer = await self._agent.post(
                f"{self._config.deployment_path}/decisions/{decision_id}/relist", {}
            )
        except (HubRefused, HubUnreachable) as exc:
            log.warning("sidecar: the re-list after -32020 failed: %s", exc)
            return None
        changed = answer.get("changed")
        return changed if isinstance(changed, bool) else None

    async def challenged(self, lease: Lease, scopes: tuple[str, ...]) -> None:
        """The upstream answered ``lease``'s OAuth token 403 ``insufficient_scope`` naming
        ``scopes``: the hub records them on the credential (a failed report is logged), and the
        lease is dropped, so the call after a step-up leases the new token."""
        if self._leases.get(lease.credential_id) is lease:
            del self._leases[lease.credential_id]
            self._close_later(lease)  # calls may still be using its client
        if not scopes or lease.fingerprint is None:
            return
        body = {
            "deployment_id": self._config.deployment,
            "fingerprint": lease.fingerprint,
            "scopes": list(scopes),
        }
        try:
            await self._sidecar.post(
                f"/tenants/{self._config.tenant}/credentials/{lease.credential_id}/challenges",
                body,
            )
        except (HubRefused, HubUnreachable) as exc:
            log.warning("sidecar: the insufficient_scope challenge was not recorded: %s", exc)

    def _report(self, decision_id: str, record: CallRecord | None, decided_at: float) -> None:
        if record is None:
            return
        body: dict[str, Any] = {
            "outcome": "success" if record.outcome == "success" else "failed",
            "class": record.error_class,
            "reason": record.reason,
            "upstream_ms": record.upstream_ms,
        }
        self.reports.add(decision_id, {k: v for k, v in body.items() if v is not None}, decided_at)
