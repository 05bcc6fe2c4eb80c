"""The handshake eras of the agents' endpoint: 2025-11-25, 2025-06-18, 2025-03-26 (§10.4, §15).

Review note (2026-12-01): everything the endpoint does for the handshake eras is in this one
module, so it can be removed in one piece once agents have moved to 2026-07-28. Review it again
when the spec marks 2025-11-25 deprecated.

Stateless: ``initialize`` is answered without a session id (the offered version when the hub
speaks it, else 2025-11-25) once its params have the schema's required members (else
``-32602``: ``protocolVersion`` a string, ``capabilities`` an object, ``clientInfo`` an object
with string ``name`` and ``version``; other members and the capabilities' contents are not
looked at, and an unknown version is counter-offered, not refused); ``notifications/initialized``
and any other notification or client response with 202, ``ping`` with ``{}``; ``tools/list``
and ``tools/call`` as the host answers (a ``tools/list`` with a cursor is ``-32602``:
:mod:`hub.mcp.server.pagination`, the hub issues none); every other method (resources,
prompts, completions, logging) ``-32601``. JSON-RPC errors of the handshake eras travel with
HTTP 200. A batch (JSON array; 2025-03-26 only) is accepted only from a request with no
``MCP-Protocol-Version`` header, at most :data:`MAX_BATCH` messages, authenticated once for the
whole HTTP request (the endpoint does that before dispatching); any other batch is one
``-32600``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hub.mcp.server.answers import (
    CallContext,
    HttpAnswer,
    InputRequired,
    RpcError,
    ToolsHandler,
    error_message,
    request_id_of,
    result_message,
)
from hub.mcp.server.messages import INTERNAL_ERROR, INVALID_PARAMS, Message, parse_message
from hub.mcp.server.pagination import check_no_cursor
from hub.mcp.wire import INVALID_REQUEST, LEGACY_VERSIONS, METHOD_NOT_FOUND

__all__ = ["BATCH_VERSION", "DEFAULT_VERSION", "MAX_BATCH", "BatchProgress", "handle_legacy"]

MAX_BATCH: Final = 20
BATCH_VERSION: Final = "2025-03-26"  # the only revision with batches
DEFAULT_VERSION: Final = "2025-03-26"  # no header: "assume 2025-03-26" (MCP-PROTOCOL §3a)
NEWEST: Final = LEGACY_VERSIONS[0]


def _check_initialize(params: Mapping[str, Any]) -> None:
    """``-32602`` unless the params carry what ``InitializeRequestParams`` requires (every
    revision from 2025-03-26 to 2025-11-25; real clients — the ``mcp`` SDKs, the hub's own,
    the conformance suite's — always send all three)."""
    if not isinstance(params.get("protocolVersion"), str):
        raise RpcError(INVALID_PARAMS, "params.protocolVersion must be a string")
    if not isinstance(params.get("capabilities"), dict):
        raise RpcError(INVALID_PARAMS, "params.capabilities must be an object")
    info = params.get("clientInfo")
    if not (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    ):
        raise RpcError(
            INVALID_PARAMS, "params.clientInfo must be an object with string name and version"
        )


def _initialize(handler: ToolsHandler, params: Mapping[str, Any]) -> dict[str, Any]:
    _check_initialize(params)
    offered = params["protocolVersion"]
    version = offered if offered in LEGACY_VERSIONS else NEWEST
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": dict(handler.server_info),
    }
    if handler.instructions:
        result["instructions"] = handler.instructions
    return result


async def _request(handler: ToolsHandler, message: Message, ctx: CallContext) -> dict[str, Any]:
    method, params = message.method, message.params
    if method == "initialize":
        return _initialize(handler, params)
    if method == "ping":
        return {}
    if method == "tools/list":
        check_no_cursor(params)
        return {"tools": await handler.list_tools(ctx)}
    if method == "tools/call":
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "params.name must be a string")
        called = await handler.call_tool(name, params.get("arguments"), params, ctx)
        if isinstance(called, InputRequired):  # a 2026-07-28 answer only; never for this era
            raise RpcError(INTERNAL_ERROR, "Internal error")
        return called
    raise RpcError(METHOD_NOT_FOUND, "Method not found")


async def _one(
    handler: ToolsHandler, raw: Any, ctx: CallContext
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The response to one message (None for notifications and responses) and extra headers."""
    try:
        message = parse_message(raw)
    except RpcError as error:
        return error_message(None, error), {}
    if message.kind != "request":
        return None, {}
    try:
        return result_message(message.id, await _request(handler, message, ctx)), {}
    except RpcError as error:
        return error_message(message.id, error), error.headers


@dataclass
class BatchProgress:
    """How far a batch got, for whoever cuts it short: the answers of the messages done, the
    headers they added, and the index of the message running (-1: none started)."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    running: int = -1

    def cut(self, raw: list[Any], running: RpcError, not_run: RpcError) -> HttpAnswer:
        """The batch's answer once it was cut short: the answers of the messages done, then
        ``running`` for the request that was running and ``not_run`` for each after it (a
        notification gets none). HTTP 200 when a message was done (a client reads its answer;
        at 503 an SDK client reads none), else ``running``'s status."""
        answers = list(self.answers)
        for index in range(max(self.running, 0), len(raw)):
            request_id = request_id_of(raw[index])
            if request_id is not None:
                error = running if index == self.running else not_run
                answers.append(error_message(request_id, error))
        if self.answers:
            return HttpAnswer(200, answers, self.headers)
        return HttpAnswer(running.status, answers or error_message(None, running), running.headers)


async def handle_legacy(
    handler: ToolsHandler,
    raw: Any,
    version: str | None,
    headers: Mapping[str, str],
    progress: BatchProgress | None = None,
) -> HttpAnswer:
    """One POST of a handshake-era client (``version``: its header, None when absent); a batch
    records how far it got in ``progress``."""
    ctx = CallContext(era="legacy", protocol_version=version or DEFAULT_VERSION, headers=headers)
    if isinstance(raw, list):
        if version is not None or not raw or len(raw) > MAX_BATCH:
            error = RpcError(INVALID_REQUEST, "Invalid Request: batch refused")
            return HttpAnswer(400, error_message(None, error))
        done = progress or BatchProgress()
        for index, item in enumerate(raw):
            done.running = index  # the messages run one after the other
            answer, item_headers = await _one(handler, item, ctx)
            done.headers.update(item_headers)
            if answer is not None:
                done.answers.append(answer)
        done.running = len(raw)
        if not done.answers:
            return HttpAnswer(202)
        return HttpAnswer(200, done.answers, done.headers)
    answer, extra = await _one(handler, raw, ctx)
    if answer is None:
        return HttpAnswer(202)
    status = 400 if "error" in answer and answer["error"]["code"] == INVALID_REQUEST else 200
    return HttpAnswer(status, answer, extra)
