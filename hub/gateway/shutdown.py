"""The agents' endpoint cut short (DESIGN §15): what a request cut by the end of ``hub serve``'s
``HUB_SHUTDOWN_GRACE_S``, or by its database going away, is answered, and a response's audit
wait cut by the shutdown.

At SIGTERM uvicorn lets the requests in flight run for the grace, then cancels them once; a
request cancelled then is answered here (:func:`stopping`, :func:`cut_batch`) instead of with
uvicorn's ``text/plain`` 500, and a response still waiting for its audit rows ends quietly
(:func:`audited`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request

from hub.core.components import components_of
from hub.gateway.adapters.audit import HubAudit
from hub.gateway.engine.errors import UNAVAILABLE
from hub.mcp.server.answers import HttpAnswer, RpcError
from hub.mcp.server.dispatcher import answer_each
from hub.mcp.server.legacy import BatchProgress

__all__ = [
    "HUB_STOPPING",
    "Stopping",
    "audited",
    "cut_batch",
    "cut_by_shutdown",
    "cut_unavailable",
    "stopping",
    "stopping_error",
    "unavailable_error",
]

#: ``data.reason`` of the answer to a request cut short by the hub's shutdown
HUB_STOPPING = "hub_stopping"


class Stopping:
    """The mark ``hub serve`` adds to an app's components when it is told to stop
    (:mod:`hub.cli.serve`): from then on, the request's task cancelled is the end of the
    shutdown grace (uvicorn cancels the requests still running then; nothing else cancels a
    request's task from outside, and an agent that goes away is :func:`unless_gone`'s)."""


def cut_by_shutdown(request: Request) -> bool:
    """Whether the cancellation being handled is the end of the shutdown grace; if so it is
    taken (``uncancel``), so that the answer can still be sent: uvicorn cancels a request once,
    and the connection stays open until its answer is written."""
    if Stopping not in components_of(request.app):
        return False  # a cancellation of another kind (an in-process caller's) goes on
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    return True


def stopping_error(*, dispatched: bool) -> RpcError:
    """The error of a request cut short by the hub's shutdown: JSON-RPC ``50300`` at HTTP 503,
    class ``unavailable``, reason :data:`HUB_STOPPING`; the message says whether the call may
    have run (``dispatched``: its upstream leg may have begun; the audit row of the call says
    ``cancelled``).

    uvicorn's own answer was a ``text/plain`` 500, which no MCP client reads as an answer (the
    sidecar took it for a hub that gave none). The endpoint's answer for the hub unavailable is
    ``50300`` with HTTP 503 already (an unreachable database): the same code and class, so an
    agent and the sidecar (which relays a JSON-RPC error at 503 as it is) handle one case. A
    JSON-RPC error, not an ``isError`` result: the request was not served, which is not a
    tool's outcome for the model to read (and an error answers any method and either era in
    one form, with no era's result fields to add). No ``Retry-After``: the call's outcome is
    unknown, and the agent, not a proxy, should decide whether to repeat it."""
    message = (
        "the hub is shutting down: the call's outcome is unknown (it may have run)"
        if dispatched
        else "the hub is shutting down: the request did not run"
    )
    return RpcError(
        UNAVAILABLE, message, {"class": "unavailable", "reason": HUB_STOPPING}, status=503
    )


def stopping(raw: Any, *, dispatched: bool) -> HttpAnswer:
    """The answer to a request cut short by the hub's shutdown: :func:`_stopping_error` for
    every request of the body, each with its id."""
    return answer_each(raw, stopping_error(dispatched=dispatched))


def cut_batch(raw: list[Any], progress: BatchProgress) -> HttpAnswer:
    """A batch (2025-03-26) cut short by the hub's shutdown: the answers of the messages it
    had run, the request running then "may have run", each after it "did not run" (they run
    one after the other). Every request of it used to get "may have run" at 503, the answers
    of calls that had run included: an agent repeating them would run them twice."""
    running, not_run = stopping_error(dispatched=True), stopping_error(dispatched=False)
    return progress.cut(raw, running, not_run)


async def audited(request: Request, audit: HubAudit) -> None:
    """The response's background: its calls' audit rows written. Cut by the end of the shutdown
    grace (the rows still waiting on the database), it ends quietly: uvicorn logged a traceback
    for each such request (a resilience walk, stop 53), and the writer's drain writes the rows
    or counts them lost."""
    try:
        await audit.pending.wait()
    except asyncio.CancelledError:
        if not cut_by_shutdown(request):
            raise


def unavailable_error(detail: str = "") -> RpcError:
    """``50300`` for the hub's database away (JSON-RPC, HTTP 503, class ``unavailable``)."""
    return RpcError(
        UNAVAILABLE, f"the hub is unavailable{detail}", {"class": "unavailable"}, status=503
    )


def cut_unavailable(raw: list[Any], progress: BatchProgress) -> HttpAnswer:
    """A batch (2025-03-26) whose database went away part way: the answers of the messages it
    had run, the request running then "may have run" (a call's upstream leg may have begun),
    each after it "did not run", as :func:`cut_batch` for a shutdown."""
    running = unavailable_error(": the call's outcome is unknown (it may have run)")
    return progress.cut(raw, running, unavailable_error(": the request did not run"))
