"""A server that says the tool changed (``-32020``): one re-list, then one retry (DESIGN §15).

Every upstream port of the engine (the hub's own, direct mode's in the sidecar) runs its call
through :func:`retrying_tool_change`: on ``-32020`` it asks whether the tool really changed (the
hub re-lists the server, marking drift); changed → the failure stands and the engine answers
``tool_changed``; unchanged or not known → the call is made once more, and a second ``-32020``
is ``upstream_failed`` ``tool_changed_unconfirmed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hub.gateway.engine.ports import UpstreamFailure, UpstreamResult
from hub.mcp.wire import HEADER_MISMATCH

__all__ = ["retrying_tool_change", "tool_changed"]


def tool_changed(failure: UpstreamFailure) -> bool:
    return failure.reason == "tool_error" and failure.code == HEADER_MISMATCH


async def retrying_tool_change(
    once: Callable[[], Awaitable[UpstreamResult]],
    changed: Callable[[], Awaitable[bool | None]],
) -> UpstreamResult:
    """``once()``, and on a ``-32020`` ``changed()`` (True: it did; False or None: retry)."""
    try:
        return await once()
    except UpstreamFailure as failure:
        if not tool_changed(failure) or await changed() is True:
            raise
    try:
        return await once()
    except UpstreamFailure as again:
        if tool_changed(again):
            raise UpstreamFailure(
                "tool_changed_unconfirmed", upstream_ms=again.upstream_ms
            ) from None
        raise
