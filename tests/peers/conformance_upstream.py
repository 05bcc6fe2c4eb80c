"""The upstream MCP server behind the hub in the conformance SERVER runs (both eras).

The official ``mcp`` SDK server (v2, low-level ``Server``), stateless Streamable HTTP with SSE
answers, serving the tools that ``@modelcontextprotocol/conformance`` (0.2.0-alpha.12) server
scenarios call, under the exact names and with the results each scenario checks (read from the
suite's ``dist/index.js``). Run it as a subprocess::

    python -m tests.peers.conformance_upstream --port 0 [--host 127.0.0.1]

It prints ``HUB_PEER_LISTENING <port>`` once it accepts connections; the endpoint is ``/mcp``.

Tools (no arguments unless said):

- content: ``test_simple_text``, ``test_image_content`` (1x1 PNG), ``test_audio_content`` (WAV),
  ``test_embedded_resource``, ``test_multiple_content_types``; ``test_error_handling`` answers
  ``isError: true``; ``json_schema_2020_12_tool`` (a 2020-12 input schema, for the pending
  ``json-schema-2020-12`` scenario).
- notifications: ``test_tool_with_progress`` (progress 0, 50, 100 of 100 against the caller's
  ``progressToken``), ``test_tool_with_logging`` and ``test_logging_tool`` (three ``info`` log
  messages; on 2026-07-28 the SDK sends them only when the request's ``_meta`` carries a
  ``logLevel``).
- input from the client: ``test_sampling`` (``prompt``), ``test_elicitation`` (``message``),
  ``test_elicitation_sep1034_defaults``, ``test_elicitation_sep1330_enums``,
  ``test_streaming_elicitation`` and ``test_missing_capability`` (needs ``sampling``: without it
  ``-32021`` with ``requiredCapabilities: {"sampling": {}}``). In the handshake eras they send the
  server-to-client request on the call's stream; on 2026-07-28 they answer ``input_required``
  (MRTR) and complete when retried with the responses.
- MRTR (2026-07-28, SEP-2322): ``test_input_required_result_elicitation`` (key ``user_name``),
  ``…_sampling`` (``capital_question``), ``…_list_roots`` (``client_roots``),
  ``…_request_state`` (``confirm`` + ``requestState``; the answer says ``state-ok``),
  ``…_multiple_inputs`` (``user_name``, ``greeting``, ``client_roots``), ``…_multi_round``
  (``step1`` then ``step2``), ``…_tampered_state`` and ``…_capabilities`` (only the input
  requests the client declared a capability for). ``requestState`` is HMAC-signed with a key
  made at start; a state that does not verify is ``-32602``. Missing responses are requested
  again (a new ``input_required``), never an error.

``logging/setLevel`` is accepted (handshake eras). Resources, prompts and completions are not
served: the hub proxies only tools (DESIGN §10.4), so the scenarios about them fail at the hub
whatever an upstream offers.

Sessions are on (stateful mode) so that the handshake eras can carry server-to-client requests;
the 2026-07-28 wire is stateless whatever the mode. Pointed at this server directly, the suite
passes every ``tools-*``, ``server-stateless`` and ``input-required-result-*`` tool scenario of
both requirement sets.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import BaseModel

from tests.peers.conformance_rounds import rounds_of
from tests.peers.sdk_server import serve

__all__ = ["TOOLS", "build_server", "main"]

MODERN = "2026-07-28"
PNG_1X1 = (  # a 1x1 red pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)
WAV_MINIMAL = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _string_argument(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": description,
        "inputSchema": schema if schema is not None else NO_ARGUMENTS,
    }
    for name, description, schema in [
        ("test_simple_text", "Tests simple text content response", None),
        ("test_image_content", "Tests image content response", None),
        ("test_audio_content", "Tests audio content response", None),
        ("test_embedded_resource", "Tests embedded resource content response", None),
        ("test_multiple_content_types", "Tests text, image and resource content together", None),
        ("test_error_handling", "Tests error response handling", None),
        ("test_tool_with_progress", "Tests progress notifications", None),
        ("test_tool_with_logging", "Tests log messages during execution", None),
        ("test_logging_tool", "Logs three messages (only when the request asks for logs)", None),
        (
            "test_sampling",
            "Tests server-initiated sampling",
            _string_argument("prompt", "The prompt to send to the LLM"),
        ),
        (
            "test_elicitation",
            "Tests server-initiated elicitation",
            _string_argument("message", "The message to show the user"),
        ),
        ("test_elicitation_sep1034_defaults", "Elicitation with defaults (SEP-1034)", None),
        ("test_elicitation_sep1330_enums", "Elicitation with enum schemas (SEP-1330)", None),
        ("test_streaming_elicitation", "Asks the client for input while running", None),
        ("test_missing_capability", "Needs the client's sampling capability", None),
        ("test_input_required_result_elicitation", "MRTR: one elicitation", None),
        ("test_input_required_result_sampling", "MRTR: one sampling request", None),
        ("test_input_required_result_list_roots", "MRTR: one roots/list request", None),
        ("test_input_required_result_request_state", "MRTR: requestState round trip", None),
        ("test_input_required_result_multiple_inputs", "MRTR: three input requests", None),
        ("test_input_required_result_multi_round", "MRTR: two rounds of input", None),
        ("test_input_required_result_tampered_state", "MRTR: integrity-protected state", None),
        ("test_input_required_result_capabilities", "MRTR: only declared capabilities", None),
        ("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12),
    ]
]
_SCHEMAS = {tool["name"]: tool["inputSchema"] for tool in TOOLS}


_CAPABILITY_OF = {
    "elicitation/create": types.ClientCapabilities(elicitation=types.ElicitationCapability()),
    "sampling/createMessage": types.ClientCapabilities(sampling=types.SamplingCapability()),
    "roots/list": types.ClientCapabilities(roots=types.RootsCapability()),
}
_STREAM_REQUESTS: dict[str, tuple[Any, type[BaseModel]]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}


# ---------------------------------------------------------------------------- request state
class StateSeal:
    """``requestState`` = base64url(JSON) "." HMAC-SHA256 under a key made at start."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def _mac(self, body: str) -> str:
        digest = hmac.new(self._key, body.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def seal(self, tool: str, round_index: int) -> str:
        payload = json.dumps({"tool": tool, "round": round_index}, separators=(",", ":"))
        body = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
        return f"{body}.{self._mac(body)}"

    def open(self, tool: str, state: str) -> int:
        """The round ``state`` names for ``tool``, or ``-32602``."""
        body, _, mac = state.partition(".")
        if not hmac.compare_digest(mac, self._mac(body)):
            raise MCPError(INVALID_PARAMS, "requestState failed its integrity check")
        payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        if payload.get("tool") != tool or not isinstance(payload.get("round"), int):
            raise MCPError(INVALID_PARAMS, "requestState belongs to another request")
        round_index: int = payload["round"]
        return round_index


# ---------------------------------------------------------------------------- results
def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=is_error
    )


def _content_result(blocks: list[dict[str, Any]]) -> types.CallToolResult:
    return types.CallToolResult.model_validate({"content": blocks})


CONTENT: dict[str, list[dict[str, Any]]] = {
    "test_simple_text": [{"type": "text", "text": "This is a simple text response for testing."}],
    "test_image_content": [{"type": "image", "data": PNG_1X1, "mimeType": "image/png"}],
    "test_audio_content": [{"type": "audio", "data": WAV_MINIMAL, "mimeType": "audio/wav"}],
    "test_embedded_resource": [
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }
    ],
    "test_multiple_content_types": [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": json.dumps({"test": "data", "value": 123}),
            },
        },
    ],
    "json_schema_2020_12_tool": [{"type": "text", "text": "ok"}],
}

Ctx = ServerRequestContext[Any, Any]


@dataclass
class Interactive:
    """The tools that need input from the client, in either era."""

    seal: StateSeal

    async def call(
        self, ctx: Ctx, name: str, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        rounds = rounds_of(name, params.arguments or {})
        if name == "test_missing_capability" and not _declares(ctx, "sampling/createMessage"):
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "test_missing_capability needs the client's sampling capability",
                {"requiredCapabilities": {"sampling": {}}},
            )
        if ctx.protocol_version != MODERN:
            return await self._ask_on_stream(ctx, name, rounds)
        return self._mrtr(ctx, name, rounds, params)

    async def _ask_on_stream(
        self, ctx: Ctx, name: str, rounds: list[dict[str, dict[str, Any]]]
    ) -> types.CallToolResult:
        """Handshake eras: each input request is a server-to-client request on the stream."""
        answers: dict[str, Any] = {}
        for round_requests in rounds:
            for key, request in round_requests.items():
                if not _declares(ctx, request["method"]):
                    return _text(f"{name}: the client does not support {request['method']}")
                request_type, result_type = _STREAM_REQUESTS[request["method"]]
                answer = await ctx.session.send_request(
                    request_type.model_validate(request),
                    result_type,
                    metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
                )
                answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        return _completed(name, answers, state_ok=True)

    def _mrtr(
        self,
        ctx: Ctx,
        name: str,
        rounds: list[dict[str, dict[str, Any]]],
        params: types.CallToolRequestParams,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """2026-07-28: ``input_required`` until every round is answered (SEP-2322)."""
        round_index = 0
        if params.request_state is not None:
            round_index = self.seal.open(name, params.request_state)
        responses = {
            k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
            for k, v in (params.input_responses or {}).items()
        }
        if not 0 <= round_index < len(rounds):
            raise MCPError(INVALID_PARAMS, "requestState names no round of this tool")
        wanted = rounds[round_index]
        if name == "test_input_required_result_capabilities":
            wanted = {k: v for k, v in wanted.items() if _declares(ctx, v["method"])}
        if wanted and all(key in responses for key in wanted):
            round_index += 1
            if round_index == len(rounds):
                return _completed(name, responses, state_ok=params.request_state is not None)
            wanted = rounds[round_index]
        return types.InputRequiredResult.model_validate(
            {"inputRequests": wanted, "requestState": self.seal.seal(name, round_index)}
        )


def _declares(ctx: Ctx, method: str) -> bool:
    return ctx.session.check_client_capability(_CAPABILITY_OF[method])


def _completed(name: str, answers: Mapping[str, Any], *, state_ok: bool) -> types.CallToolResult:
    if name == "test_input_required_result_elicitation":
        content = answers.get("user_name", {}).get("content") or {}
        return _text(f"Hello, {content.get('name', 'stranger')}!")
    if name == "test_input_required_result_request_state":
        return _text("state-ok" if state_ok else "state missing")
    if name in ("test_sampling", "test_missing_capability"):
        sampled = answers.get("sampling", {}).get("content", {})
        return _text(f"LLM response: {sampled.get('text', 'No response')}")
    if name == "test_elicitation":
        answer = answers.get("elicitation", {})
        return _text(
            f"User response: action={answer.get('action')}, "
            f"content={json.dumps(answer.get('content') or {})}"
        )
    if name.startswith("test_elicitation_") or name == "test_streaming_elicitation":
        answer = answers.get("elicitation", {})
        return _text(
            f"Elicitation completed: action={answer.get('action')}, "
            f"content={json.dumps(answer.get('content') or {})}"
        )
    return _text(f"{name} completed with {sorted(answers)}")


async def _notifying(ctx: Ctx, name: str) -> types.CallToolResult:
    if name == "test_tool_with_progress":
        for step in (0, 50, 100):
            if step:
                await asyncio.sleep(0.05)
            await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        token = (ctx.meta or {}).get("progressToken")
        return _text(str(token) if token is not None else "progress done")
    for i, message in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if i:
            await asyncio.sleep(0.05)
        await ctx.session.send_log_message(
            "info", message, logger="conformance-upstream", related_request_id=ctx.request_id
        )
    return _text("Tool with logging executed successfully")


def build_server() -> Server[Any]:
    interactive = Interactive(StateSeal())

    async def list_tools(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult.model_validate({"tools": TOOLS})

    async def call_tool(
        ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        if name not in _SCHEMAS:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")
        if name in CONTENT:
            return _content_result(CONTENT[name])
        if name == "test_error_handling":
            return _text("This tool intentionally returns an error for testing", is_error=True)
        if name in ("test_tool_with_progress", "test_tool_with_logging", "test_logging_tool"):
            return await _notifying(ctx, name)
        return await interactive.call(ctx, name, params)

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()  # handshake eras only (tools-call-with-logging sets a level)

    handler: Callable[[Ctx, types.CallToolRequestParams], Awaitable[Any]] = call_tool
    return Server(
        "hub-conformance-upstream",
        version="1.0.0",
        instructions="The tools the MCP conformance server scenarios call.",
        on_list_tools=list_tools,
        on_call_tool=handler,
        on_set_logging_level=set_level,
        get_tool_input_schema=_SCHEMAS.get,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    # The handshake-era logging helpers are deprecated on 2026-07-28; this fixture uses them on
    # purpose, in the eras that have them.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    # Stateful (sessions) so the handshake eras can carry server-to-client requests; the
    # 2026-07-28 wire is stateless whatever the mode.
    app = build_server().streamable_http_app(stateless_http=False, host=args.host)
    asyncio.run(serve(app, args.host, args.port))


if __name__ == "__main__":
    main()
