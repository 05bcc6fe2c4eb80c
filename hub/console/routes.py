"""Every console router, in the order their routes are added (the catch-all 404 page last)."""

from __future__ import annotations

from fastapi import APIRouter

from hub.console import (
    approvals,
    audit,
    credentials,
    deployments,
    grants,
    missing,
    servers,
    session,
    static,
)

__all__ = ["ROUTERS"]

ROUTERS: tuple[APIRouter, ...] = (
    static.router,
    session.router,
    approvals.router,
    deployments.router,
    servers.router,
    grants.router,
    credentials.router,
    audit.router,
    missing.router,  # last: the console's 404 page for anything else under /console
)
