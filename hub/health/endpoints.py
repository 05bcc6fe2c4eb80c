"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Request, Response

from hub.core.deps import DatabaseDep
from hub.core.errors import ServiceUnavailable
from hub.core.metrics import CONTENT_TYPE, Metrics
from hub.credentials.rotation import remaining_by_key_id
from hub.health.service import check_readiness

router = APIRouter(tags=["health"])
log = logging.getLogger("hub.health")


@router.get("/healthz")
async def healthz() -> dict[str, Any]:
    """Liveness: the process is serving requests."""
    return {"data": {"status": "ok"}}


@router.get("/metrics", response_class=Response, name="metrics")
async def metrics(request: Request, db: DatabaseDep) -> Response:
    """Prometheus metrics of this replica (no tenant data, no secrets)."""
    registry: Metrics = request.app.state.metrics
    try:
        async with asyncio.timeout(5):
            registry.set_rotation_backlog(await remaining_by_key_id(db, request.app.state.keyring))
    except Exception:  # metrics stay available while the database is not
        log.warning("metrics: could not read the key-rotation backlog")
    return Response(registry.render(), media_type=CONTENT_TYPE)


@router.get("/readyz", responses={503: {"description": "Not ready"}})
async def readyz(request: Request, db: DatabaseDep) -> dict[str, Any]:
    """Readiness: the database answers and every stored key id is in the keyring."""
    problem = await check_readiness(db, request.app.state.readiness_checks)
    if problem is not None:
        raise ServiceUnavailable(problem)
    return {"data": {"status": "ready"}}
