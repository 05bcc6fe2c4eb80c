"""The ``tools/list`` cursor of the agents' endpoint and the sidecar (MCP
``server/utilities/pagination``, every revision the hub serves).

The hub lists every tool on one page and never issues a ``nextCursor``, so no cursor a client
sends can be one the server gave it: every cursor is invalid, and "Invalid cursors SHOULD result
in an error with code -32602". In 2026-07-28 that error is also what tells a client to drop the
pages it cached (``server/utilities/caching``). The empty string is no exception: in 2026-07-28
it is a cursor like any other (it does not mean "the first page"), and the hub issued none.
``"cursor": null`` is refused too: ``Cursor`` is a string in every schema, and an SDK client
leaves the key out rather than sending null. With no ``cursor`` key the list is answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hub.mcp.server.answers import RpcError
from hub.mcp.server.messages import INVALID_PARAMS

__all__ = ["check_no_cursor", "cursor_problem"]


def cursor_problem(params: Mapping[str, Any]) -> str | None:
    """Why a ``tools/list`` with these params is ``-32602``, or None when it has no cursor."""
    if "cursor" not in params:
        return None
    if not isinstance(params["cursor"], str):
        return "params.cursor must be a string"
    return "Invalid cursor: this server issues no cursors (every tool is on the first page)"


def check_no_cursor(params: Mapping[str, Any]) -> None:
    """:class:`RpcError` ``-32602`` (HTTP 200, as the module's other params errors) for any
    cursor."""
    problem = cursor_problem(params)
    if problem is not None:
        raise RpcError(INVALID_PARAMS, problem)
