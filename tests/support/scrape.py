"""Read one sample from ``GET /metrics``, as Prometheus would (its own text parser)."""

from __future__ import annotations

import httpx2
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["scraped"]


async def scraped(client: httpx2.AsyncClient, name: str, **labels: str) -> float | None:
    """The value of sample ``name`` with exactly ``labels`` in a fresh scrape; None if absent."""
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None
