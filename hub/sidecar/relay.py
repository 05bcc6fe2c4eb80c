"""Relay mode (DESIGN §10.5): each ``tools/call`` goes to the hub's MCP endpoint as the agent.

The call is sent in the 2026-07-28 era (stateless, with the ``Mcp-Method``/``Mcp-Name``/
``Mcp-Param-*`` headers the endpoint checks), so nothing about the result is lost on the way; a
legacy-era agent then gets it shaped for its era by the engine's own function. The hub decides,
validates, asks for approval, holds the secret and audits: the sidecar never sees a secret. A
JSON-RPC error from the hub is passed on with its code, message and ``data`` (its class). A hub
that cannot be reached fails the call closed, as ``isError`` with class ``unavailable``: the call
did not run (reason ``hub_unreachable``). A hub that had the whole request and then gave no
usable answer (the deadline passed, the connection dropped, an answer that is not JSON-RPC) is
``unavailable`` too, but the call may have run: the result says its outcome is unknown (reason
``hub_no_answer``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)

from hub import __version__
from hub.gateway.engine.errors import error_result
from hub.gateway.engine.model import ToolEntry
from hub.gateway.engine.shaping import APPROVAL_META, MODERN_RESULT_KEYS
from hub.mcp import MODERN_VERSION, encode_header_value
from hub.mcp.headers import param_headers
from hub.sidecar.asking import Asking, is_input_required
from hub.sidecar.errors import HubUnreachable
from hub.sidecar.hubclient import HubClient

__all__ = ["Relay", "RelayError", "unavailable"]

log = logging.getLogger("hub.sidecar")

CLIENT_INFO = {"name": "mcp-hub-sidecar", "version": __version__}
#: the client capabilities of a relayed call whose client can be sent to the approval's page
URL_ELICITATION: dict[str, Any] = {"elicitation": {"url": {}}}


class RelayError(Exception):
    """The hub answered with a JSON-RPC error: pass it on as is."""

    def __init__(self, code: int, message: str, data: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def unavailable(why: str, *, sent: bool = False, reason: str = "hub_unreachable") -> dict[str, Any]:
    """The ``unavailable`` result of a call the hub did not answer: it did not run (``reason``:
    ``hub_unreachable``, or ``hub_refused`` for a bundle the hub refused), or, once the request
    was ``sent``, its outcome is unknown (``hub_no_answer``)."""
    if sent:
        text = f"unavailable: the call's outcome is unknown, it may have run ({why})"
        return error_result("unavailable", text, reason="hub_no_answer")
    text = f"unavailable: the call did not run ({why})"
    return error_result("unavailable", text, reason=reason)


def _clean(result: dict[str, Any]) -> dict[str, Any]:
    """The hub's result without the 2026-07-28 envelope fields the sidecar's own server sets."""
    cleaned = {k: v for k, v in result.items() if k not in MODERN_RESULT_KEYS}
    meta = cleaned.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_META_KEY in meta:
        meta = {k: v for k, v in meta.items() if k != SERVER_INFO_META_KEY}
        if meta:
            cleaned["_meta"] = meta
        else:
            del cleaned["_meta"]
    return cleaned


def _approval_meta(result: dict[str, Any]) -> dict[str, Any]:
    """An ``input_required``'s ``_meta``, only the hub's approval marker."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and APPROVAL_META in meta:
        return {"_meta": {APPROVAL_META: meta[APPROVAL_META]}}
    return {}


class Relay:
    def __init__(self, hub: HubClient) -> None:
        self._hub = hub
        self._ids = 0

    async def call(
        self, tool: ToolEntry | None, name: str, arguments: Any, asking: Asking | None = None
    ) -> dict[str, Any]:
        """The hub's ``CallToolResult``; :class:`RelayError` for its JSON-RPC errors.

        With ``asking`` the call declares URL-mode elicitation and carries the round's echo, and
        the hub's ``input_required`` comes back whole (:mod:`hub.sidecar.asking`)."""
        self._ids += 1
        headers = {
            "mcp-protocol-version": MODERN_VERSION,
            "mcp-method": "tools/call",
            "mcp-name": encode_header_value(name),
        }
        if tool is not None and isinstance(arguments, dict):
            with contextlib.suppress(ValueError):  # the hub refuses such a tool anyway
                headers.update(param_headers(tool.tool, arguments))
        params: dict[str, Any] = {
            "name": name,
            "_meta": {
                PROTOCOL_VERSION_META_KEY: MODERN_VERSION,
                CLIENT_CAPABILITIES_META_KEY: {} if asking is None else URL_ELICITATION,
                CLIENT_INFO_META_KEY: CLIENT_INFO,
            },
        }
        if arguments is not None:
            params["arguments"] = arguments
        if asking is not None:
            if asking.request_state is not None:
                params["requestState"] = asking.request_state
            if asking.input_responses is not None:
                params["inputResponses"] = asking.input_responses
        message = {"jsonrpc": "2.0", "id": self._ids, "method": "tools/call", "params": params}
        try:
            answer = await self._hub.mcp(message, headers)
        except HubUnreachable as exc:
            log.warning("sidecar: relaying %s failed: %s", name[:64], exc)
            return unavailable(str(exc), sent=exc.sent)
        error = answer.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            raise RelayError(
                code if isinstance(code, int) else -32603,
                str(error.get("message") or "the hub refused the call")[:1000],
                error.get("data"),
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            return unavailable("the hub's answer held no result", sent=True)
        if asking is not None and is_input_required(result):
            return {k: v for k, v in result.items() if k != "_meta"} | _approval_meta(result)
        return _clean(result)
