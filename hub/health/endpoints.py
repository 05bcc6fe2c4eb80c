"""Liveness and readiness probes, and the Prometheus metrics of this replica."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel

from hub.core.components import component
from hub.core.crypto import Keyring
from hub.core.deps import DatabaseDep
from hub.core.errors import ServiceUnavailable
from hub.core.metrics import CONTENT_TYPE, Metrics
from hub.core.route_shape import ShapedRoute
from hub.core.schemas import Envelope
from hub.credentials.rotation import remaining_by_key_id
from hub.health.service import Readiness, check_readiness

router = APIRouter(tags=["health"], route_class=ShapedRoute)
log = logging.getLogger("hub.health")

MetricsDep = Annotated[Metrics, Depends(component(Metrics))]
KeyringDep = Annotated[Keyring, Depends(component(Keyring))]
ReadinessDep = Annotated[Readiness, Depends(component(Readiness))]


class HealthStatus(BaseModel):
    status: Literal["ok", "ready"]


@router.get("/healthz")
async def healthz() -> Envelope[HealthStatus]:
    """Liveness: the process is serving requests."""
    return Envelope(data=HealthStatus(status="ok"))


#: The key-rotation backlog is a scan of every credential: a scrape reads it at most this often,
#: so the scrapes in between answer from memory without touching the database.
BACKLOG_REFRESH_S = 30.0


@router.get("/metrics", response_class=Response, name="metrics")
async def metrics(db: DatabaseDep, registry: MetricsDep, keyring: KeyringDep) -> Response:
    """Prometheus metrics of this replica (no tenant data, no secrets)."""
    if registry.rotation_backlog_older_than(BACKLOG_REFRESH_S):
        try:
            async with asyncio.timeout(5):
                registry.set_rotation_backlog(await remaining_by_key_id(db, keyring))
        except Exception:  # metrics stay available while the database is not
            log.warning("metrics: could not read the key-rotation backlog")
    return Response(registry.render(), media_type=CONTENT_TYPE)


@router.get("/readyz", responses={503: {"description": "Not ready"}})
async def readyz(db: DatabaseDep, readiness: ReadinessDep) -> Envelope[HealthStatus]:
    """Readiness: the database answers and every stored key id is in the keyring."""
    problem = await check_readiness(db, readiness.checks)
    if problem is not None:
        raise ServiceUnavailable(problem)
    return Envelope(data=HealthStatus(status="ready"))
