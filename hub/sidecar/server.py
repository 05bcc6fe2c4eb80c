"""The agent-facing MCP server: the official ``mcp`` SDK's low-level server (DESIGN §10.5).

``tools/list`` is the engine's own listing over the bundle (``allow`` and ``ask`` tools, sorted by
wire name, ask tools marked ``_meta["io.mcphub/approval"] = "required"``), shaped for the
agent's era, on one page: a ``cursor`` is ``-32602``, as at the hub's endpoint
(:mod:`hub.mcp.server.pagination`); ``tools/call`` goes to the call path of the mode (relay:
the hub's endpoint).
When the bundle is stale past ``--max-stale`` (or the hub refused it), lists fail with JSON-RPC
``50300`` and calls fail closed (``isError``, class ``unavailable``) without running. Arguments
the hub's endpoint would not have parsed (``NaN``, ``1e400``, nesting past its bound: the SDK's
parser takes them) are refused first with the endpoint's own ``-32700``, in every mode.

A changed bundle sends ``notifications/tools/list_changed``: on the handshake eras to every
session that has spoken to this server (it is advertised as ``tools.listChanged``), on
2026-07-28 to every open ``subscriptions/listen`` stream (the SDK's listen handler).
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hub import __version__
from hub.gateway.engine.engine import Gateway
from hub.gateway.engine.errors import UNAVAILABLE
from hub.gateway.engine.model import Effect, ToolEntry
from hub.gateway.engine.shaping import for_legacy_result
from hub.mcp.server.dispatcher import arguments_problem
from hub.mcp.server.messages import INVALID_PARAMS, PARSE_ERROR
from hub.mcp.server.pagination import cursor_problem
from hub.sidecar.asking import (
    Asking,
    Elicit,
    asking_of,
    bounded,
    is_input_required,
    through_the_page,
)
from hub.sidecar.bundle import Bundle
from hub.sidecar.relay import RelayError, unavailable
from hub.sidecar.sync import Stale, Syncer

__all__ = ["BundleDecider", "CallPath", "SidecarServer"]

#: how long one client's list_changed may take before it is given up
NOTIFY_S = 1.0
log = logging.getLogger("hub.sidecar")

INSTRUCTIONS = (
    "Tools of an MCP Hub deployment, served by its sidecar. A tool marked "
    "_meta['io.mcphub/approval'] = 'required' runs once a person approves the exact call."
)

LIST_CHANGED = "notifications/tools/list_changed"

# (bundle, tool or None, wire name, arguments, URL-elicitation round or None) -> CallToolResult
# (or a 2026-07-28 input_required result when a round was declared); RelayError for JSON-RPC errors
CallPath = Callable[[Bundle, ToolEntry | None, str, Any, Asking | None], Awaitable[dict[str, Any]]]


class BundleDecider:
    """The engine's :class:`~hub.gateway.engine.ports.DecidePort` over the bundle's effects."""

    def __init__(self, bundle: Bundle) -> None:
        self._effects = {t.grant_key: bundle.effects[w] for w, t in bundle.view.tools.items()}
        self._version = bundle.grants_version

    @property
    def grants_version(self) -> int:
        return self._version

    def grant_effect(self, grant_key: str) -> Effect:
        return self._effects.get(grant_key, "deny")


class _Server(Server[Any]):
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def _legacy(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS


def _elicitor(ctx: ServerRequestContext[Any, Any]) -> Elicit | None:
    """How to send a handshake-era client's person to a page: None unless the client declared
    URL-mode elicitation at ``initialize`` and this request can carry a request back to it."""
    session = ctx.session
    capabilities = session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or elicitation.url is None or not session.can_send_request:
        return None

    async def elicit(message: str, url: str, elicitation_id: str, seconds: float) -> str:
        ask = session.elicit_url(message, url, elicitation_id, related_request_id=ctx.request_id)
        return await bounded(ask, seconds)

    return elicit


class SidecarServer:
    def __init__(self, syncer: Syncer, call_path: CallPath, engine: Gateway | None = None) -> None:
        self._syncer = syncer
        self._call_path = call_path
        self._engine = engine or Gateway()
        self._bus = InMemorySubscriptionBus()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.server = _Server(
            "mcp-hub-sidecar",
            version=__version__,
            instructions=INSTRUCTIONS,
            cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self.server.add_request_handler("tools/list", types.PaginatedRequestParams, self._list)
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._call)
        self.server.middleware.append(self._track)

    async def _track(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if _legacy(ctx):
            # A request's session is per request; the connection under it is the client's, and
            # its standalone channel (stdio, the GET stream) is where list_changed goes. The
            # low-level context names no connection, so it is read off the session.
            connection = getattr(ctx.session, "_connection", None)
            if isinstance(connection, Connection):
                self._connections.add(connection)
        return await call_next(ctx)

    async def tools_changed(self) -> None:
        await self._bus.publish(ToolsListChanged())
        for connection in list(self._connections):
            # a gone or stalled client: notifications are advisory, and never hold up the sync
            with contextlib.suppress(Exception), anyio.move_on_after(NOTIFY_S):
                await connection.notify(LIST_CHANGED, None)

    async def _list(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> HandlerResult:
        # the raw params: the SDK's model reads ``"cursor": null`` as no cursor
        problem = cursor_problem(ctx.params or {})
        if problem is not None:
            raise MCPError(INVALID_PARAMS, problem)
        try:
            bundle = self._syncer.current()
        except Stale as stale:
            raise MCPError(UNAVAILABLE, str(stale), {"class": "unavailable"}) from None
        legacy = _legacy(ctx)
        tools = self._engine.list_tools(bundle.view, BundleDecider(bundle), legacy=legacy)
        return {"tools": tools} if legacy else {"resultType": "complete", "tools": tools}

    async def _call(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        name = params.name
        problem = arguments_problem(params.arguments)
        if problem is not None:
            raise MCPError(PARSE_ERROR, problem)
        legacy = _legacy(ctx)
        try:
            bundle = self._syncer.current()
        except Stale as stale:  # fails closed, shaped for the era as every other result
            result = unavailable(str(stale), reason=stale.reason)
            return for_legacy_result(result) if legacy else {"resultType": "complete", **result}
        tool = bundle.view.tools.get(name)
        arguments = params.arguments

        async def call(asking: Asking | None) -> dict[str, Any]:
            return await self._call_path(bundle, tool, name, arguments, asking)

        elicit = _elicitor(ctx) if legacy else None
        try:
            if elicit is not None:
                result = await through_the_page(call, elicit)
            else:
                result = await call(None if legacy else asking_of(ctx.params))
        except RelayError as error:
            raise MCPError(error.code, error.message, error.data) from None
        if legacy:
            return for_legacy_result(result)
        if is_input_required(result):
            return result  # the hub's round, passed through: this client declared it
        return {"resultType": "complete", **result}
