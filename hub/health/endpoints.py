"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from hub.core.deps import DatabaseDep
from hub.core.errors import ServiceUnavailable
from hub.health.service import check_readiness

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, Any]:
    """Liveness: the process is serving requests."""
    return {"data": {"status": "ok"}}


@router.get("/readyz", responses={503: {"description": "Not ready"}})
async def readyz(request: Request, db: DatabaseDep) -> dict[str, Any]:
    """Readiness: the database answers and every stored key id is in the keyring."""
    problem = await check_readiness(db, request.app.state.readiness_checks)
    if problem is not None:
        raise ServiceUnavailable(problem)
    return {"data": {"status": "ready"}}
