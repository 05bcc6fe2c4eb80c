"""The baseline of ``bench.rest``: bare FastAPI routes with the hub's paths, served like the hub.

``python -m bench._bare --port N [--workers N]`` serves two routes that answer what the hub's do
(a server's JSON, a decision's JSON) with no database, authentication, middleware or response
model, under the same uvicorn options and the same JSON logging as ``hub serve``. The ratio
hub/bare is then the hub's own cost per request, on this machine, in this run.
"""

from __future__ import annotations

import argparse
from typing import Any

from fastapi import FastAPI

from hub.cli.serve import UVICORN_OPTIONS
from hub.core.logging import configure_logging

__all__ = ["create_bare_app"]

_SERVER = {
    "data": {
        "id": "5b0e6a86-8a4b-4f8a-9a1f-3c6f1f0e8d11",
        "handle": "linear",
        "url": "https://mcp.example.com/mcp",
        "credential_id": None,
        "era": "2025-03-26",
        "protocol_version": None,
        "created_at": "2026-11-30T12:00:00Z",
        "updated_at": "2026-11-30T12:00:00Z",
    }
}


def create_bare_app() -> FastAPI:
    app = FastAPI()

    @app.get("/tenants/{t}/servers/{handle}")
    async def get_server(t: str, handle: str) -> dict[str, Any]:
        return _SERVER

    @app.post("/tenants/{t}/grants/check")
    async def check(t: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"data": {"effect": "allow", "grant_id": None}}

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    configure_logging("INFO")
    uvicorn.run(
        "bench._bare:create_bare_app",
        factory=True,
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        **UVICORN_OPTIONS,
    )


if __name__ == "__main__":
    main()
