"""Prometheus metrics of one hub replica (DESIGN §11), in a registry of its own per app.

Labels are bounded by construction: route templates (never raw paths, so no ids), methods, status
codes, effects, discovery reasons and key ids. Nothing tenant-specific and no secret is a label.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_TYPE", "Metrics", "MetricsMiddleware"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Histogram(
            "hub_request_duration_seconds",
            "Time to answer an HTTP request.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.decisions = Counter(
            "hub_policy_decisions_total",
            "Grant decisions taken to authorise hub routes, by effect.",
            ["effect"],
            registry=self.registry,
        )
        self.discoveries = Counter(
            "hub_discoveries_total",
            "Discoveries of upstream MCP servers, by outcome (ok or the failure reason).",
            ["outcome"],
            registry=self.registry,
        )
        self.upstream = Histogram(
            "hub_upstream_operation_seconds",
            "Time of one upstream operation (a whole discovery: every request, DNS included).",
            ["operation"],
            registry=self.registry,
        )
        self.rotation_backlog = Gauge(
            "hub_credential_fields_not_under_active_key",
            "Encrypted credential fields still under a key other than the active one.",
            ["key_id"],
            registry=self.registry,
        )

        self._backlog_read_at: float | None = None

    def set_rotation_backlog(self, remaining: dict[str, int]) -> None:
        self.rotation_backlog.clear()
        for key_id, count in remaining.items():
            self.rotation_backlog.labels(key_id=key_id).set(count)
        self._backlog_read_at = time.monotonic()

    def rotation_backlog_older_than(self, seconds: float) -> bool:
        """Whether the backlog gauge was never read, or was read more than ``seconds`` ago."""
        read_at = self._backlog_read_at
        return read_at is None or time.monotonic() - read_at > seconds

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Time every HTTP request, labelled by the route template that matched it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(
                method=scope.get("method", ""), route=template, status=str(status)
            ).observe(time.perf_counter() - started)
