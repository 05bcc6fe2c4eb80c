"""One MCP endpoint inside one egress operation: POSTs, DELETE, ids and the request count.

Streamable HTTP (MCP-PROTOCOL §3a, §3c): every client message is its own POST with
``Accept: application/json, text/event-stream`` and ``Content-Type: application/json``; the
answer to a request is read with :func:`hub.mcp.reader.read_reply`, and the response is closed as
soon as the answer is found. Notifications and responses expect 202 with no body.

Everything goes through the caller's :class:`~hub.egress.Operation`, so its deadline (DNS
included), pin, byte budget and bearer apply to every request; :attr:`Channel.requests` counts
the HTTP requests made (tests use it to prove the remembered era skips the probe).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator, Mapping

from hub.egress import EgressError, Operation
from hub.mcp.client.reader import Reply, read_reply
from hub.mcp.wire import ACCEPT, JSON, Json, encode

__all__ = ["Channel"]

ServerRequestCallback = Callable[[dict[str, Json], str | None], Awaitable[None]]


class Channel:
    """JSON-RPC over POST to ``url``, within ``op``."""

    def __init__(self, op: Operation, url: str) -> None:
        self.op = op
        self.url = url
        self.requests = 0
        self.ids: Iterator[int] = itertools.count(1)
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + op.deadline_s

    def __repr__(self) -> str:
        return f"<Channel requests={self.requests}>"

    def next_id(self) -> int:
        """A fresh request id (ids are never reused within an operation)."""
        return next(self.ids)

    def remaining(self) -> float:
        """Seconds left before the operation's deadline."""
        return self._deadline - asyncio.get_running_loop().time()

    @staticmethod
    def _headers(extra: Mapping[str, str]) -> dict[str, str]:
        return {"Accept": ACCEPT, "Content-Type": JSON, **extra}

    async def call(
        self,
        message: Mapping[str, Json],
        headers: Mapping[str, str],
        *,
        on_request: ServerRequestCallback | None = None,
    ) -> Reply:
        """POST one request (``message`` has an integer ``id``) and read its answer."""
        request_id = message["id"]
        self.requests += 1
        async with self.op.stream(
            "POST", self.url, content=encode(message), headers=self._headers(headers)
        ) as response:
            return await read_reply(response, request_id, on_request)

    async def send(self, message: Mapping[str, Json], headers: Mapping[str, str]) -> int:
        """POST a notification or a response; the status (202 expected), body discarded."""
        self.requests += 1
        async with self.op.stream(
            "POST", self.url, content=encode(message), headers=self._headers(headers)
        ) as response:
            return response.status_code

    async def delete(self, headers: Mapping[str, str], *, within: float) -> None:
        """A best-effort DELETE (ending a legacy session): any status or failure is ignored.

        It gets at most ``within`` seconds and never eats into the last half second of the
        operation, so a server that hangs on DELETE cannot turn a finished exchange into a
        timeout.
        """
        budget = min(within, self.remaining() - 0.5)
        if budget <= 0:
            return
        self.requests += 1
        try:
            async with asyncio.timeout(budget):
                async with self.op.stream("DELETE", self.url, headers=dict(headers)):
                    pass
        except (TimeoutError, EgressError):
            pass
