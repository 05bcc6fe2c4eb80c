"""Liveness and readiness probes, and the Prometheus metrics of this replica."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel

from hub.core.components import component
from hub.core.deps import DatabaseDep
from hub.core.errors import ServiceUnavailable
from hub.core.metrics import CONTENT_TYPE, Metrics
from hub.core.route_shape import ShapedRoute
from hub.core.schemas import Envelope
from hub.core.scraped import ScrapedState
from hub.health.service import Readiness, check_readiness

router = APIRouter(tags=["health"], route_class=ShapedRoute)

MetricsDep = Annotated[Metrics, Depends(component(Metrics))]
StateDep = Annotated[ScrapedState, Depends(component(ScrapedState))]
ReadinessDep = Annotated[Readiness, Depends(component(Readiness))]


class HealthStatus(BaseModel):
    status: Literal["ok", "ready"]


@router.get("/healthz")
async def healthz() -> Envelope[HealthStatus]:
    """Liveness: the process is serving requests (``HEAD`` too, without the body)."""
    return Envelope(data=HealthStatus(status="ok"))


@router.head("/healthz", include_in_schema=False, name="healthz_head")
async def healthz_head() -> Envelope[HealthStatus]:
    """``HEAD /healthz``, for load balancers that probe with it: ``GET``'s status, no body."""
    return await healthz()


@router.get("/metrics", response_class=Response, name="metrics")
async def metrics(db: DatabaseDep, registry: MetricsDep, state: StateDep) -> Response:
    """Prometheus metrics of this replica (no tenant data, no secrets), with the gauges of the
    database's state read at most every 30 s (:mod:`hub.core.scraped`)."""
    await state.refresh(db)  # never raises: metrics stay available while the database is not
    return Response(registry.render(), media_type=CONTENT_TYPE)


@router.get("/readyz", responses={503: {"description": "Not ready"}})
async def readyz(db: DatabaseDep, readiness: ReadinessDep) -> Envelope[HealthStatus]:
    """Readiness: the database answers and every stored key id is in the keyring (``HEAD``
    too, without the body)."""
    problem = await check_readiness(db, readiness.checks)
    if problem is not None:
        raise ServiceUnavailable(problem)
    return Envelope(data=HealthStatus(status="ready"))


@router.head("/readyz", include_in_schema=False, name="readyz_head")
async def readyz_head(db: DatabaseDep, readiness: ReadinessDep) -> Envelope[HealthStatus]:
    """``HEAD /readyz``: ``GET``'s status (200, or 503 when not ready), no body."""
    return await readyz(db, readiness)
