"""A bare forwarding proxy: the floor under any gateway written on the hub's stack.

``python -m bench._forward --port N --upstream URL`` serves ``POST /mcp`` with one FastAPI route
on uvicorn (the hub's own options, :data:`hub.cli.serve.UVICORN_OPTIONS`) that sends the body to
``URL`` with one long-lived ``httpx2.AsyncClient`` (keep-alive) and returns the upstream's status,
body and MCP headers. No authentication, no database, no decision, no validation, no audit, no
egress checks. Set beside the same SDK peer called directly, it measures what the two HTTP legs
alone cost on this machine (a server side and a client side in one Python process), which a
gateway pays before it does any of its own work. A report, not a product path: the hub's
upstream calls go through :mod:`hub.egress` only.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import uvicorn
from fastapi import FastAPI, Request, Response

from hub.cli.serve import UVICORN_OPTIONS
from hub.core.logging import configure_logging

__all__ = ["create_forward_app"]

#: request headers passed on besides the ``mcp-*`` ones; the rest (host, content-length,
#: connection) are the client's own
_PASSED = ("accept", "content-type")
#: response headers passed back
_RETURNED = ("content-type", "mcp-session-id")


def create_forward_app(upstream: str) -> FastAPI:
    clients: list[httpx2.AsyncClient] = []

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with httpx2.AsyncClient(timeout=30) as client:
            clients.append(client)
            yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/mcp")
    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k in _PASSED or k[:4] == "mcp-"}
        answer = await clients[0].post(upstream, content=await request.body(), headers=headers)
        back = {k: v for k in _RETURNED if (v := answer.headers.get(k)) is not None}
        return Response(answer.content, answer.status_code, back)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    configure_logging("WARNING")
    app = create_forward_app(args.upstream)
    uvicorn.run(app, host="127.0.0.1", port=args.port, **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
