"""Every console router, in the order their routes are added (the catch-all 404 page last)."""

from __future__ import annotations

from fastapi import APIRouter

from hub.console import approvals, session, static

__all__ = ["ROUTERS"]

ROUTERS: tuple[APIRouter, ...] = (
    static.router,
    session.router,
    approvals.router,
)
