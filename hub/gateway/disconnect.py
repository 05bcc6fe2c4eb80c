"""A tool call ends when its agent goes away (MCP cancellation over Streamable HTTP).

An agent that gives up on a call closes its HTTP request: the 2026-07-28 transport makes that
the cancellation itself ("MUST be treated by the server as cancellation"), and the SDK's
2025 client closes it too when it sends ``notifications/cancelled``. The hub went on with the
call to its end, so a side-effecting tool ran after the agent had stopped waiting, and held its
egress slot until the deadline. :func:`unless_gone` runs the request's work while a watcher
reads the request's ``receive``: once the body has been read, the next message is
``http.disconnect``, sent when the client closes the connection (or when the answer is sent).
On a disconnect the work is cancelled, which cancels the upstream leg (its connection is
closed, and a kept handshake session is told with ``notifications/cancelled``:
:mod:`hub.mcp.client.mcp_client`), and the call's audit row says ``cancelled``.

Written by hand: Starlette's ``is_disconnected`` polls and would have to be asked in a loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.types import Receive

__all__ = ["unless_gone"]

T = TypeVar("T")


async def unless_gone(receive: Receive, work: Awaitable[T]) -> T | None:
    """``work``'s answer, or None when the client went away first (the work then cancelled;
    ``work`` never answers None). Call only after the request's body was read whole."""
    task = asyncio.current_task()
    if task is None:  # not in a task: nothing to cancel
        return await work
    gone = asyncio.Event()
    working = [True]  # cleared with no await after the work ends: no cancel can follow it

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()
        if working[0]:
            task.cancel()

    watcher = asyncio.create_task(watch())
    try:
        try:
            answer = await work
        finally:
            working[0] = False
            watcher.cancel()
    except asyncio.CancelledError:
        if not gone.is_set():
            raise  # the hub itself is stopping, not the client gone
        task.uncancel()
        return None
    if gone.is_set():  # the work ended as the client went: the cancel it was sent is spent
        task.uncancel()
        return None
    return answer
