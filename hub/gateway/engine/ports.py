"""The small ports the engine talks through (DESIGN §10: decide, approve, call, audit).

The hub plugs in adapters over its own services (``hub.gateway.adapters``); the sidecar plugs in
remote ones over the hub's API. None of them is imported here: the engine only needs these shapes.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from hub.gateway.engine.model import DeploymentView, Effect, ServerEntry, ToolEntry

__all__ = [
    "CLASSIC_ASK",
    "ApprovalOutcome",
    "ApprovalPort",
    "AskMode",
    "AuditPort",
    "CallRecord",
    "DecidePort",
    "Shaper",
    "StateSelection",
    "UpstreamFailure",
    "UpstreamPort",
    "UpstreamResult",
]


class DecidePort(Protocol):
    """The grant engine's effect on a grant key for the calling agent (before the ceiling)."""

    def grant_effect(self, grant_key: str) -> Effect: ...

    @property
    def grants_version(self) -> int: ...


@dataclass(frozen=True)
class ApprovalOutcome:
    """Where an ``ask`` call stands: ``approved`` (consumed: run it), ``pending``, ``denied``,
    ``crowded``: the agent has as many pending approvals as it may, so none was made for this
    call (no approval id; ``retry_after_s``, when the first of them expires), or ``withdrawn``:
    approved while the call waited, but what allowed the call changed meanwhile (its key, its
    agent, its grant, the deployment's entry or the tool), so it does not run and the approval
    stays unused; or the approval went with its deployment during the wait. A pending one
    names the hashes it is bound to, for a 2026 ``requestState``."""

    status: Literal["approved", "pending", "denied", "crowded", "withdrawn"]
    approval_id: uuid.UUID | None
    expires_at: datetime | None = None
    url: str | None = None
    retry_after_s: int | None = None
    arguments_sha256: str | None = None
    tool_sha256: str | None = None


@dataclass(frozen=True)
class StateSelection:
    """What a 2026 retry's ``requestState`` names (DESIGN §15): an approval and the hashes it was
    sealed with. It grants nothing: rules (a) and (b) still match the call by its binding."""

    approval_id: uuid.UUID
    arguments_sha256: str
    tool_sha256: str


@dataclass(frozen=True)
class AskMode:
    """How long an ``ask`` call waits for a decision before it is answered as pending.

    ``always``: up to ``HUB_APPROVAL_WAIT_S`` (a client that cannot be sent to the approval page);
    ``never``: not at all; ``selected``: only when ``selected`` names this very call (its
    arguments and tool hashes), that is a URL-elicitation retry after the person was sent to the
    page. A first call of such a client is answered at once, so the page is shown at once."""

    wait: Literal["always", "never", "selected"] = "always"
    selected: StateSelection | None = None


CLASSIC_ASK = AskMode()


class ApprovalPort(Protocol):
    async def resolve(
        self,
        view: DeploymentView,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        arguments_sha256: str,
        ask: AskMode = CLASSIC_ASK,
    ) -> ApprovalOutcome: ...


Shaper = Callable[[dict[str, Any], list[str]], Awaitable[dict[str, Any]]]
"""``await shape(raw_result, secrets)``: the engine's redaction and shaping, run by the upstream
port while the secret is in hand, so the secret never leaves the port (a large result is shaped
off the event loop)."""


@dataclass(frozen=True)
class UpstreamResult:
    result: dict[str, Any]
    upstream_ms: float


class UpstreamFailure(Exception):
    """The call did not produce a result: ``reason`` (an egress or MCP reason), maybe the
    upstream JSON-RPC ``code`` and its redacted message."""

    def __init__(
        self,
        reason: str,
        *,
        upstream_ms: float = 0.0,
        code: int | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.upstream_ms = upstream_ms
        self.code = code
        self.message = message


class UpstreamPort(Protocol):
    async def call(
        self,
        view: DeploymentView,
        server: ServerEntry,
        tool: ToolEntry,
        arguments: Mapping[str, Any],
        shape: Shaper,
    ) -> UpstreamResult: ...


@dataclass
class CallRecord:
    """What the audit row of one ``tools/call`` says (never argument values)."""

    deployment_id: uuid.UUID
    agent_id: uuid.UUID
    wire_name: str
    grant_key: str | None = None
    decision: Effect | None = None
    reasons: tuple[str, ...] = ()
    approval_id: uuid.UUID | None = None
    arguments_sha256: str | None = None
    tool_sha256: str | None = None
    catalog_version: int | None = None
    grants_version: int | None = None
    outcome: Literal["success", "denied", "failed", "pending"] = "success"
    error_class: str | None = None
    reason: str | None = None
    upstream_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class AuditPort(Protocol):
    async def record(self, record: CallRecord) -> None: ...
