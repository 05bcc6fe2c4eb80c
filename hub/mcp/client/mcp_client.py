"""``McpClient``: discovery and tool calls over Streamable HTTP, in either era (DESIGN §7).

Each call runs inside **one** egress operation (``fetcher.operation(pin=…, deadline_s=…,
bearer=…)``): one total deadline with DNS included, the pin, the byte budget, the bearer.
:class:`~hub.egress.EgressError` subclasses propagate unchanged; the client's own failures are
:class:`~hub.mcp.errors.McpError`.

**Era negotiation** (MCP-PROTOCOL §3c, §9.8, §9.9). The eras are tried in a plan:

- ``protocol_version`` given: only its era, offering exactly that version (``-32022`` still
  gets its one retry with a version from ``data.supported``);
- ``force_era`` given: only that era;
- ``era_hint`` (the era that worked last time, remembered by the caller): that era first, the
  other one if it fails;
- nothing: modern first (``server/discover`` is the probe), then the handshake.

An attempt that fails before the server proved its era (an *unsettled* failure: a refused
``server/discover``, a non-modern 400/404/405, an HTML page…) moves on to the next era; 401/403,
a recognised modern error, and any failure after the handshake or discover succeeded stop the
negotiation at once. When every attempt failed, the handshake's failure is reported (it tells
``not_mcp`` from ``handshake_failed`` best), or else the modern one.

``call_tool`` without any hint probes with ``server/discover`` before calling (so a tool never
runs on a guess); with a hint it calls straight away, and a legacy signal (on which the server
ran nothing) falls back to the handshake.

**Kept sessions.** A client built with a :class:`~hub.mcp.client.keeper.SessionKeeper` keeps the
handshake session of a ``call_tool`` that names a ``reuse`` partition, instead of deleting it,
and the next call of that partition with the same URL, pin, scope, bearer and offer resumes it
(no ``initialize``; see :mod:`hub.mcp.client.keeper`). A call that fails deletes its session as
before; expired sessions it found are deleted within its operation. Discovery never keeps one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar, get_args

import anyio
import mcp_types

from hub.core.portable_json import nul_replaced
from hub.egress import Fetcher
from hub.mcp.client.channel import Channel
from hub.mcp.client.keeper import KeptSession, SessionKeeper
from hub.mcp.client.legacy import LegacySession
from hub.mcp.client.modern import ModernSession
from hub.mcp.client.results import CallResult, DiscoveryResult, ServerFacts, valid_model
from hub.mcp.client.tools import ToolCatalog
from hub.mcp.errors import McpError
from hub.mcp.headers import header_params
from hub.mcp.wire import Era, Json, default_version, era_of

__all__ = ["McpClient"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
Plan = list[tuple[Era, str]]
Session = ModernSession | LegacySession
ERAS: tuple[Era, ...] = get_args(Era)


def plan_eras(
    era_hint: Era | None, force_era: Era | None, protocol_version: str | None
) -> tuple[Plan, bool]:
    """The (era, version) attempts in order, and whether the era is a guess (no hint at all)."""
    for era_option in (era_hint, force_era):
        if era_option is not None and era_option not in ERAS:
            raise ValueError("an era is 'modern' or 'legacy'")
    if protocol_version is not None:
        era = era_of(protocol_version)
        if force_era is not None and force_era != era:
            raise ValueError("protocol_version belongs to the other era than force_era")
        return [(era, protocol_version)], False
    if force_era is not None:
        return [(force_era, default_version(force_era))], False
    if era_hint is not None:
        other: Era = "legacy" if era_hint == "modern" else "modern"
        return [(era_hint, default_version(era_hint)), (other, default_version(other))], False
    return [("modern", default_version("modern")), ("legacy", default_version("legacy"))], True


@dataclass
class _Keeping:
    """One call's use of the keeper: the key's fields but the offer, and the expired sessions
    it took out (deleted before the call's operation ends)."""

    keeper: SessionKeeper
    fields: tuple[str, str, str, str | None, str | None]
    expired: list[KeptSession] = field(default_factory=list)
    resumed: bool = False  # the call's session was a kept one
    _keys: dict[str, bytes] = field(default_factory=dict)

    def __repr__(self) -> str:  # the fields hold the bearer
        return "<_Keeping>"

    def key(self, offer: str) -> bytes:
        """The key for ``offer``, computed once per call (taking and giving back use it)."""
        if offer not in self._keys:
            self._keys[offer] = self.keeper.key(*self.fields, offer)
        return self._keys[offer]


def _kept(session: LegacySession, keeping: _Keeping | None) -> bool:
    """Whether ``keeping`` took ``session`` for a later call (else the caller deletes it)."""
    if keeping is None:
        return False
    kept = session.keep()
    return kept is not None and keeping.keeper.give(keeping.key(session.offer), kept)


def _note_lost(session: LegacySession, keeping: _Keeping | None) -> None:
    """Count a kept session the server no longer knew (its call opened a new one)."""
    if keeping is not None and keeping.resumed and session.reopened:
        keeping.keeper.lost()


class McpClient:
    """The hub's MCP client; the caller remembers the era, the keeper (if any) kept sessions."""

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        client_info: Mapping[str, Json],
        keeper: SessionKeeper | None = None,
    ) -> None:
        if not valid_model(mcp_types.Implementation, client_info):
            raise ValueError("client_info must be an MCP Implementation (name, version)")
        self._fetcher = fetcher
        self.client_info = dict(client_info)
        self.keeper = keeper

    def __repr__(self) -> str:
        return f"<McpClient {self.client_info.get('name')!r}>"

    def _session(
        self, channel: Channel, era: Era, version: str, keeping: _Keeping | None
    ) -> Session:
        if era == "modern":
            return ModernSession(channel, self.client_info, version)
        if keeping is not None:
            kept, expired = keeping.keeper.take(keeping.key(version))
            keeping.expired.extend(expired)
            if kept is not None:
                keeping.resumed = True
                return LegacySession.resume(channel, self.client_info, version, kept)
        return LegacySession(channel, self.client_info, version)

    async def _negotiate(
        self,
        channel: Channel,
        plan: Plan,
        work: Callable[[Session], Awaitable[T]],
        keeping: _Keeping | None = None,
    ) -> tuple[Session, T]:
        """Run ``work`` in each planned era until one succeeds (see the module docstring)."""
        failures: dict[Era, McpError] = {}
        for era, version in plan:
            session = self._session(channel, era, version, keeping)
            try:
                outcome = await self._attempt(session, work, keeping)
            except McpError as exc:
                if exc.reason == "unauthorized" or exc.settled or session.established:
                    raise
                logger.debug("mcp: the %s era did not answer (%s)", era, exc.reason)
                failures[era] = exc
            else:
                return session, outcome
        raise failures.get("legacy") or failures["modern"]

    @staticmethod
    async def _attempt(
        session: Session, work: Callable[[Session], Awaitable[T]], keeping: _Keeping | None
    ) -> T:
        if isinstance(session, ModernSession):
            return await work(session)  # cancelled, its request's connection closes: enough
        try:
            outcome = await work(session)
        except asyncio.CancelledError:
            # the call was cancelled (its agent went away): the server is told, and the session
            # ended, never kept with a request of unknown fate in it. Shielded: under anyio (the
            # SDK's servers, so the sidecar) a cancelled scope cancels every later await too
            with anyio.CancelScope(shield=True):
                await session.abandon()
            raise
        except Exception as exc:
            _note_lost(session, keeping)
            # a JSON-RPC error answering the call leaves the session as good as a result does
            answered = isinstance(exc, McpError) and exc.reason == "tool_error"
            if not (answered and _kept(session, keeping)):
                await session.close()
            raise
        _note_lost(session, keeping)
        if not _kept(session, keeping):
            await session.close()
        return outcome

    async def _delete_expired(self, channel: Channel, keeping: _Keeping | None) -> None:
        if keeping is None or not keeping.expired:
            return
        gone = [
            LegacySession.resume(channel, self.client_info, kept.version, kept)
            for kept in keeping.expired
        ]
        await asyncio.gather(*(session.close() for session in gone))

    async def discover(
        self,
        url: str,
        *,
        pin: str,
        bearer: str | None,
        deadline_s: float,
        era_hint: Era | None = None,
        force_era: Era | None = None,
        protocol_version: str | None = None,
        scope: str | None = None,
    ) -> DiscoveryResult:
        """The server's description and every tool (``tools/list`` followed to its end)."""
        plan, _ = plan_eras(era_hint, force_era, protocol_version)

        async def work(session: Session) -> tuple[ServerFacts, ToolCatalog]:
            facts = await (
                session.discover() if isinstance(session, ModernSession) else session.initialize()
            )
            return facts, await session.list_tools()

        operation = self._fetcher.operation(
            pin=pin, deadline_s=deadline_s, bearer=bearer, scope=scope
        )
        async with operation as op:
            channel = Channel(op, url)
            session, (facts, catalog) = await self._negotiate(channel, plan, work)
            era: Era = "modern" if isinstance(session, ModernSession) else "legacy"
            return DiscoveryResult(
                era=era,
                protocol_version=facts.protocol_version,
                # stored with the catalog: U+0000 cannot be (PostgreSQL), so it reads U+FFFD
                server_info=nul_replaced(facts.server_info),
                capabilities=nul_replaced(facts.capabilities),
                instructions=nul_replaced(facts.instructions),
                tools=catalog.tools,
                dropped_tools=catalog.dropped,
                dropped_total=catalog.dropped_total,
                requests=channel.requests,
            )

    async def call_tool(
        self,
        url: str,
        name: str,
        arguments: Mapping[str, Json],
        *,
        pin: str,
        bearer: str | None,
        deadline_s: float,
        tool: Mapping[str, Json] | None = None,
        era_hint: Era | None = None,
        force_era: Era | None = None,
        protocol_version: str | None = None,
        scope: str | None = None,
        reuse: str | None = None,
    ) -> CallResult:
        """Call one tool; the raw ``CallToolResult`` (``isError`` preserved).

        ``tool`` is the raw Tool definition from discovery: its ``x-mcp-header`` markings are
        mirrored into ``Mcp-Param-*`` headers. A JSON-RPC error answer is ``McpError``
        ``tool_error`` with the upstream ``code``; an ``input_required`` (MRTR) result is
        ``invalid_result`` for now. ``reuse`` names the partition whose handshake sessions this
        call may resume and keep (with a keeper; see the module docstring).
        """
        if tool is not None:
            if tool.get("name") != name:
                raise ValueError("tool is not the definition of the tool called")
            schema = tool.get("inputSchema")
            header_params(schema if isinstance(schema, Mapping) else {})
        plan, probing = plan_eras(era_hint, force_era, protocol_version)

        async def work(session: Session) -> dict[str, Json]:
            if isinstance(session, ModernSession):
                if probing:
                    await session.discover()
                return await session.call_tool(name, arguments, tool)
            if not session.established:
                await session.initialize()
            return await session.call_tool(name, arguments, tool)

        keeping = None
        if self.keeper is not None and reuse is not None:
            keeping = _Keeping(self.keeper, (reuse, url, pin, scope, bearer))
        operation = self._fetcher.operation(
            pin=pin, deadline_s=deadline_s, bearer=bearer, scope=scope
        )
        async with operation as op:
            channel = Channel(op, url)
            try:
                session, result = await self._negotiate(channel, plan, work, keeping)
            except Exception:
                await self._delete_expired(channel, keeping)
                raise
            await self._delete_expired(channel, keeping)
            if isinstance(session, ModernSession):
                return CallResult("modern", session.version, result, channel.requests)
            return CallResult("legacy", session.version or session.offer, result, channel.requests)
