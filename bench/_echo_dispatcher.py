"""The hub's own MCP dispatcher alone, with one echo tool: the other half of the SDK-server choice.

``python -m bench._echo_dispatcher --port N`` serves ``POST /mcp`` with
:func:`hub.mcp.server.dispatcher.dispatch` (both eras, stateless, exactly as the agents'
endpoint runs it) over a handler that only echoes: no database, no authentication, no upstream.
Set beside the official SDK server answering the same tool (``tests.peers.sdk_server``), it
measures what the protocol layer itself costs per call in each implementation (DESIGN §10.4:
"decide SDK server vs own dispatcher by measurement").
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, Response

from hub.cli.serve import UVICORN_OPTIONS
from hub.core.logging import configure_logging
from hub.mcp.server.answers import CallContext, HttpAnswer, RpcError, error_message
from hub.mcp.server.dispatcher import dispatch, parse_body

__all__ = ["EchoHandler", "create_echo_app"]

TOOLS = [
    {
        "name": "echo",
        "description": "Returns its arguments.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
]


class EchoHandler:
    """A :class:`~hub.mcp.server.answers.ToolsHandler` whose one tool echoes its arguments."""

    @property
    def server_info(self) -> Mapping[str, Any]:
        return {"name": "echo-dispatcher", "version": "0"}

    @property
    def instructions(self) -> str | None:
        return None

    async def list_tools(self, ctx: CallContext) -> list[dict[str, Any]]:
        return TOOLS

    async def call_tool(
        self, name: str, arguments: Any, params: Mapping[str, Any], ctx: CallContext
    ) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": json.dumps(arguments)}], "isError": False}


def _response(answer: HttpAnswer) -> Response:
    if answer.body is None:
        return Response(status_code=answer.status, headers=dict(answer.headers))
    return Response(answer.encoded(), answer.status, dict(answer.headers), "application/json")


def create_echo_app() -> FastAPI:
    app = FastAPI()
    handler = EchoHandler()

    @app.post("/mcp")
    async def mcp(request: Request) -> Response:
        try:
            raw = parse_body(await request.body())
        except RpcError as error:
            return _response(HttpAnswer(error.status, error_message(None, error)))
        headers = {k.lower(): v for k, v in request.headers.items()}
        return _response(await dispatch(handler, raw, headers))

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.api_route("/mcp", methods=["GET", "DELETE"])
    async def no_stream() -> Response:
        return Response(status_code=405, headers={"allow": "POST"})

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    configure_logging("WARNING")
    uvicorn.run(create_echo_app(), host="127.0.0.1", port=args.port, **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
