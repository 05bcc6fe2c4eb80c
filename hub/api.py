"""Router wiring: every domain's routes, mounted once."""

from __future__ import annotations

from fastapi import APIRouter

from hub.health.endpoints import router as health_router

__all__ = ["api_router"]

api_router = APIRouter()
api_router.include_router(health_router)
