"""Scale-out under failure (DESIGN §11): replicas on one PostgreSQL, a replica killed, the
database restarted — no acknowledged write lost, none doubled.

Each test starts real ``hub serve`` processes connected as the app's non-owner role (row-level
security on) and writes principals through the REST API, each with a name of its own, so the
database's contents can be compared with the answers: every 2xx must be there exactly once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.scaleout.cluster import (
    INITDB,
    PrivateServer,
    Writes,
    hub_process,
    prepare,
    principal_names,
)
from tests.support.databases import postgres_required, postgres_url


def _check_acknowledged(writes: Writes, owner_url: str, tenant: str) -> None:
    held = principal_names(owner_url, tenant)
    acknowledged = [o.name for o in writes.outcomes if o.status is not None and o.status < 300]
    assert acknowledged
    assert {name: held[name] for name in acknowledged} == dict.fromkeys(acknowledged, 1)
    # and nothing is there twice, acknowledged or not (a write lost in a crash is not retried)
    assert [name for name, n in held.items() if n > 1] == []


def test_three_replicas_and_one_killed_mid_way(tmp_path: Path) -> None:
    owner_url = postgres_url("_scaleout")
    try:
        prepared = prepare(owner_url)
    except (OSError, TimeoutError) as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required (HUB_TEST_REQUIRE_POSTGRES) but: {exc!r}")
        pytest.skip(f"PostgreSQL unreachable: {exc!r}")
    with ExitStack() as stack:
        hubs = [
            stack.enter_context(hub_process(prepared.app_url, tmp_path, f"hub{i}"))
            for i in range(3)
        ]
        writes = Writes(hubs, prepared.tenant, prepared.key, total=240, threads=6)
        victim = 1
        with writes.running():
            writes.wait_for(60)
            hubs[victim].kill()
            killed_at = time.monotonic()
        assert not hubs[victim].alive
    survivors = [o for o in writes.outcomes if o.hub != victim]
    assert {o.status for o in survivors} == {201}  # every survivor answered every write
    assert any(o.at > killed_at for o in survivors)  # and kept serving after the kill
    after_kill = [o for o in writes.outcomes if o.hub == victim and o.at > killed_at + 0.5]
    assert {o.status for o in after_kill} <= {None}  # the dead one answered nothing
    _check_acknowledged(writes, owner_url, prepared.tenant)


@pytest.fixture
def private_server() -> Iterator[PrivateServer]:
    if INITDB is None:
        if os.environ.get("CI"):
            pytest.fail("initdb is required in CI (PostgreSQL's server binaries)")
        pytest.skip("no initdb: PostgreSQL's server binaries are not installed")
    server = PrivateServer()
    try:
        server.start()
        yield server
        server.stop("fast")
    finally:
        server.remove()


def test_postgres_restarted_under_load(tmp_path: Path, private_server: PrivateServer) -> None:
    prepared = prepare(private_server.owner_url())
    with hub_process(prepared.app_url, tmp_path, "hub") as hub:
        writes = Writes([hub], prepared.tenant, prepared.key, total=100_000, threads=3)
        with writes.running(pace_s=0.01):
            writes.wait_for(30)
            private_server.stop("immediate")
            stopped_at = time.monotonic()
            time.sleep(1.5)  # writes keep coming while the database is down
            starting_at = time.monotonic()  # from here it may answer again (start waits for it)
            private_server.start()
            restarted_at = time.monotonic()
            before = writes.acknowledged()
            writes.wait_for(before + 30)  # recovered, the hub never restarted
            writes.stop()
        assert hub.alive
    statuses = {o.status for o in writes.outcomes}
    assert statuses <= {201, 503}, statuses  # never a 500, never a dropped connection
    down = [o for o in writes.outcomes if stopped_at + 0.2 < o.at < starting_at]
    assert down
    assert {o.status for o in down} == {503}
    assert any(o.status == 201 and o.at > restarted_at for o in writes.outcomes)
    _check_acknowledged(writes, prepared.owner_url, prepared.tenant)
