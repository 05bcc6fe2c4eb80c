"""Limits shared through Redis (DESIGN §11): two hub processes spend one budget; with the storage
stopped mid-test requests are still served, a warning is logged and a metric counts them (the
documented fail-open decision), and the limits come back with the storage."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx2
import pytest

from hub.core.db import Database
from hub.core.metrics import Metrics
from hub.ratelimit import RateLimiter, parse_policies
from tests.conftest import TEST_KEY, TEST_PEPPER, make_settings
from tests.deploy.serving import running_hub
from tests.ratelimit.redis_server import own_redis, shared_redis_url
from tests.support.stories import make_tenant_admin

pytestmark = pytest.mark.slow


async def test_two_hub_processes_share_one_budget(
    db_url: str, database: Database, tmp_path: Path
) -> None:
    if db_url.startswith("sqlite"):
        pytest.skip("replicas share PostgreSQL")
    url = shared_redis_url()
    team = await make_tenant_admin(database)
    settings = {
        "HUB_DATABASE_URL": db_url,
        "HUB_ENCRYPTION_KEYS": f"t1:{TEST_KEY}",
        "HUB_API_KEY_PEPPER": TEST_PEPPER,
        "HUB_RATE_LIMIT_STORAGE_URL": url,
        "HUB_RATE_LIMITS": "rest=6/minute",
        "HUB_WORKERS": "false",
    }
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    with (
        running_hub(tmp_path / "one", **settings) as one,
        running_hub(tmp_path / "two", **settings) as two,
    ):
        async with httpx2.AsyncClient(timeout=10) as http:
            statuses = []
            for i in range(10):
                base = (one, two)[i % 2].base_url
                response = await http.get(base + team.url("servers"), headers=team.admin.headers)
                statuses.append(response.status_code)
    assert statuses.count(200) == 6, statuses
    assert statuses[6:] == [429] * 4


async def test_storage_down_fails_open_with_a_warning(
    database: Database, db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from hub.app import create_app

    team = await make_tenant_admin(database)
    with own_redis(tmp_path) as redis_server:
        settings = make_settings(
            db_url, rate_limit_storage_url=redis_server.url, rate_limits="rest=100/minute"
        )
        app = create_app(settings, database=database)
        transport = httpx2.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(transport=transport, base_url="http://hub.test") as client,
        ):
            up = await client.get(team.url("servers"), headers=team.admin.headers)
            assert up.status_code == 200
            assert up.headers["ratelimit"].startswith('"rest";r=99;')
            redis_server.stop()
            with caplog.at_level(logging.WARNING, logger="hub.ratelimit"):
                for _ in range(3):
                    down = await client.get(team.url("servers"), headers=team.admin.headers)
                    assert down.status_code == 200
                    assert "ratelimit" not in down.headers  # nothing true to advertise
            warnings = [r for r in caplog.records if "rate-limit storage" in r.getMessage()]
            assert len(warnings) == 1  # once when it starts, not once per request
            assert redis_server.url not in caplog.text
            metrics = (await client.get("/metrics")).text
            assert 'hub_rate_limit_fail_open_total{kind="rest"} 3.0' in metrics
            assert "hub_rate_limit_storage_errors_total 1.0" in metrics


async def test_limits_come_back_with_the_storage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with own_redis(tmp_path) as first:
        port = first.port
        limiter = RateLimiter(
            parse_policies("rest=2/minute"), first.url, Metrics(), retry_s=0.2, key_prefix="t"
        )
        assert (await limiter.check("rest", "p")).headers  # counted
        first.stop()
        down = await limiter.check("rest", "p")
        assert down.allowed  # admitted unchecked: no headers
        assert not down.headers
    await asyncio.sleep(0.3)  # past retry_s: the next check asks the storage again
    with caplog.at_level(logging.INFO, logger="hub.ratelimit"), own_redis(tmp_path, port):
        assert (await limiter.check("rest", "p")).allowed  # a fresh server: counting anew
        assert (await limiter.check("rest", "p")).allowed
        refused = await limiter.check("rest", "p")
        assert not refused.allowed
        assert refused.retry_after_s >= 1
        assert "rate-limit storage available again" in caplog.text
        await limiter.aclose()
