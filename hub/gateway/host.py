"""The in-hub host of the engine: one agent's request to its deployment (DESIGN §10.4).

:class:`GatewayHost` is the :class:`~hub.mcp.server.answers.ToolsHandler` the endpoint's
dispatcher calls: it lists the deployment's tools for the agent and runs each ``tools/call``
through the engine with the in-hub ports. It also holds the 2026-07-28 rule the dispatcher cannot
check alone: ``Mcp-Param-*`` headers must mirror the arguments the tool's ``x-mcp-header``
markings name (400 ``-32020``). And it counts every ``tools/call`` in the rate-limit class
``tool_call``, per agent, before anything else about the call: a refused call is JSON-RPC
``42900`` with ``data.retry_after_s`` and a ``Retry-After`` header (HTTP 200, DESIGN §15), reaches
no upstream and, like a refused REST request, writes no audit row (a flood would otherwise become
database writes); it is counted in ``hub_rate_limit_refusals_total``.

With ``states`` (the endpoint's), a 2026-07-28 client that can be sent to a page is answered
through URL-mode elicitation when its call waits for an approval (:mod:`hub.gateway.elicitation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub import __version__
from hub.gateway.adapters.request_state import RequestStates
from hub.gateway.elicitation import ask_mode, elicited
from hub.gateway.engine.engine import Gateway
from hub.gateway.engine.errors import RATE_LIMITED
from hub.gateway.engine.model import DeploymentView
from hub.gateway.engine.ports import ApprovalPort, AuditPort, DecidePort, UpstreamPort
from hub.mcp.elicitation import url_round
from hub.mcp.headers import decode_header_value, param_headers
from hub.mcp.server.answers import CallContext, InputRequired, RpcError
from hub.mcp.wire import HEADER_MISMATCH
from hub.ratelimit import RateLimiter

__all__ = ["SERVER_INFO", "GatewayHost", "tool_call_refusal"]

SERVER_INFO = {"name": "mcp-hub", "version": __version__}


def _decoded(value: str) -> str | None:
    try:
        return decode_header_value(value)
    except ValueError:
        return None


def check_param_headers(
    tool: Mapping[str, Any], arguments: Any, headers: Mapping[str, str]
) -> None:
    """``Mcp-Param-*`` as sent must equal what the arguments give (MCP-PROTOCOL §3d)."""
    try:
        expected = {
            k.lower(): _decoded(v)
            for k, v in param_headers(
                tool, arguments if isinstance(arguments, dict) else {}
            ).items()
        }
    except ValueError:
        expected = {}
    sent = {k: _decoded(v) for k, v in headers.items() if k.startswith("mcp-param-")}
    if sent != expected:
        raise RpcError(
            HEADER_MISMATCH, "Header mismatch: Mcp-Param-* must mirror the arguments", status=400
        )


@dataclass
class GatewayHost:
    engine: Gateway
    view: DeploymentView
    decide: DecidePort
    approvals: ApprovalPort
    upstream: UpstreamPort
    audit: AuditPort
    limiter: RateLimiter | None = None
    agent_key: str = ""
    states: RequestStates | None = None  # the 2026 approval path's states; None: not offered

    @property
    def server_info(self) -> Mapping[str, Any]:
        return SERVER_INFO

    @property
    def instructions(self) -> str | None:
        return (
            "Tools of an MCP Hub deployment. A tool marked _meta['io.mcphub/approval'] = "
            "'required' runs once a person approves the exact call."
        )

    async def list_tools(self, ctx: CallContext) -> list[dict[str, Any]]:
        return self.engine.list_tools(self.view, self.decide, legacy=ctx.era == "legacy")

    async def call_tool(
        self, name: str, arguments: Any, params: Mapping[str, Any], ctx: CallContext
    ) -> dict[str, Any] | InputRequired:
        await self._count_call()
        tool = self.view.tools.get(name)
        if ctx.era == "modern" and tool is not None:
            check_param_headers(tool.tool, arguments, ctx.headers)
        elicit = url_round(params) if ctx.era == "modern" and self.states is not None else None
        outcome = await self.engine.call(
            self.view,
            name,
            arguments,
            decide=self.decide,
            approvals=self.approvals,
            upstream=self.upstream,
            audit=self.audit,
            legacy=ctx.era == "legacy",
            ask=ask_mode(elicit, self.states),
        )
        asked = elicited(outcome, elicit, name, self.states)
        if asked is not None:
            return asked
        if outcome.failure is not None:
            failure = outcome.failure
            retry = failure.data.get("retry_after_s") if failure.code == RATE_LIMITED else None
            headers = {"retry-after": str(retry)} if retry is not None else None
            raise RpcError(failure.code, failure.message, dict(failure.data), headers=headers)
        assert outcome.result is not None  # noqa: S101 - one of the two is always set
        return outcome.result

    async def _count_call(self) -> None:
        refused = await tool_call_refusal(self.limiter, self.agent_key)
        if refused is not None:
            raise refused


async def tool_call_refusal(limiter: RateLimiter | None, agent_key: str) -> RpcError | None:
    """Count one ``tools/call`` of the agent ``agent_key`` in the class ``tool_call``: None when
    it is admitted, else its ``42900`` refusal. The endpoint's calls and a direct-mode sidecar's
    decisions (``POST …/decisions``) count alike: they are the same agent's calls."""
    if limiter is None:
        return None
    decision = await limiter.check("tool_call", agent_key)
    if decision.allowed:
        return None
    return RpcError(
        RATE_LIMITED,
        # the message is all many MCP clients show the model: say when to try again
        f"Too many tool calls: try again in {decision.retry_after_s} s",
        {"class": "rate_limited", "retry_after_s": decision.retry_after_s},
        headers=decision.headers,
    )
