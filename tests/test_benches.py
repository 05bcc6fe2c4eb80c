"""The benchmarks still run and still measure what they say.

``make bench`` is not part of the suite, so a bench whose own checks no longer hold (an API that
changed under it) would only be found by the next person to run it: the catalog bench was, once.
Each bench runs here on a small case (few calls, short runs, SQLite only, the Python load
generator rather than wrk), and its own assertions are the test, with the rows it prints.
Nothing is timed or compared: the numbers are ``make bench``'s. Every server they start listens
on loopback.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench import _instructions as instructions
from bench import bundle, catalog, discover, gateway, policy, rest, sidecar
from bench._peer import start_sdk_peer
from bench._serving import hub_env, served
from hub.core.migrations import upgrade


@contextmanager
def _peer(tmp_path: Path, mode: str = "stateless-json", *, legacy: bool = False) -> Iterator[str]:
    """The benches' SDK peer serving the gateway bench's tools; its URL."""
    process, url = start_sdk_peer(
        tmp_path, gateway.TOOLS, mode=mode, page_size=50, legacy_only=legacy
    )
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_catalog_bench_snapshots_and_bundles_every_tool() -> None:
    rows = catalog.measure(tools=12, page_size=5, rounds=1)
    assert [label for label, _seconds, _peak in rows] == [
        "SDK client lists the tools (base)",
        "hub snapshot (discover+store)",
        "hub bundle (names, ETag)",
    ]
    assert all(seconds > 0 and peak > 0 for _label, seconds, peak in rows)


def test_the_policy_bench_decides_for_every_size() -> None:
    rates = policy.measure(sizes=(10, 100), rounds=1)
    assert set(rates) == {10, 100}
    assert all(rate > 0 for rate in rates.values())


def test_the_discovery_bench_discovers_in_both_eras(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(discover, "TOOLS", 6)
    monkeypatch.setattr(discover, "PAGE_SIZE", 4)
    monkeypatch.setattr(discover, "WARMUP", 1)
    monkeypatch.setattr(discover, "ROUNDS", 3)
    discover.main()
    printed = capsys.readouterr().out
    for era in ("modern", "legacy"):
        assert f"{era:<8} hub" in printed
        assert f"{era:<8} sdk" in printed


def test_the_rest_bench_loads_the_hub_and_the_bare_routes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(rest, "available", lambda: None)  # the bench's own load generator
    monkeypatch.setattr(rest, "GRANTS", 20)
    monkeypatch.setattr(rest, "SECONDS", 0.3)
    monkeypatch.setattr(rest, "WARMUP_SECONDS", 0.2)
    monkeypatch.setattr(rest, "ROUNDS", 1)
    monkeypatch.setattr(instructions, "COUNT", 3)
    monkeypatch.setattr(instructions, "WARMUP", 1)
    monkeypatch.setattr(instructions, "SETTLE_S", 0.1)
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'bench.db'}"
    upgrade(db_url)
    rest._bench_backend("SQLite (file)", db_url, tmp_path, workers=False)  # 200s, or it raises
    printed = capsys.readouterr().out
    timed, _, counted = printed.partition("instructions per request")
    for case in ("GET server (tenant_admin)", "grants/check (1,000 grants)"):
        assert case in timed
    assert timed.count(" hub ") == 3
    if not instructions.valgrind_present():
        assert "skipped: valgrind is not installed" in counted
        return
    for case in ("GET server (tenant_admin)", "grants/check (1,000 grants)"):  # bare, hub, ratio
        assert re.search(rf"{re.escape(case)} +[0-9.]+ +[0-9.]+ +[0-9.]+\n", counted), counted


def test_the_gateway_bench_calls_through_the_hub_allowed_and_approved(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(gateway, "WARMUP", 1)
    monkeypatch.setattr(gateway, "ROUNDS", 3)
    monkeypatch.setattr(gateway, "ASK_ROUNDS", 2)
    monkeypatch.setattr(gateway, "CLIENTS", 2)
    monkeypatch.setattr(gateway, "THROUGHPUT_SECONDS", 0.3)
    with _peer(tmp_path) as peer_url, _peer(tmp_path, mode="json", legacy=True) as legacy_url:
        db_url = f"sqlite+aiosqlite:///{tmp_path / 'bench.db'}"
        upgrade(db_url)
        gateway.backend("SQLite (file)", db_url, tmp_path, peer_url, legacy_url)
    printed = capsys.readouterr().out
    for era in gateway.ERAS:
        assert f"{era:<11} {'allow':<{gateway.CASE}} hub " in printed
        assert f"{era:<11} {'ask, approved':<{gateway.CASE}} hub " in printed
    for path in ("hub     ", "per-call"):
        assert f"2026-07-28  {'allow, legacy upstream':<{gateway.CASE}} {path} " in printed
    assert "throughput, 2 clients" in printed


def test_the_bundle_bench_counts_a_sidecars_sync(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deployment is seeded, the bundle read answers 304 and the server read 200 (either
    raises otherwise), and both are counted."""
    monkeypatch.setattr(bundle, "SIZES", (3,))
    monkeypatch.setattr(instructions, "COUNT", 3)
    monkeypatch.setattr(instructions, "WARMUP", 1)
    monkeypatch.setattr(instructions, "SETTLE_S", 0.1)
    bundle.main()
    printed = capsys.readouterr().out
    if not instructions.valgrind_present():
        assert "skipped: valgrind is not installed" in printed
        return
    assert re.search(r"\n +3 +[0-9.]+ +[0-9.]+ +[0-9.]+\n", printed), printed


def test_the_gateway_bench_counts_instructions_for_the_hub_and_the_floor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Both servers start under callgrind, the calls run in the counted window, and each gives
    a count (valgrind is on every machine this suite runs on; without it the bench says so)."""
    monkeypatch.setattr(instructions, "COUNT", 3)
    monkeypatch.setattr(instructions, "WARMUP", 1)
    monkeypatch.setattr(instructions, "SETTLE_S", 0.1)
    with _peer(tmp_path) as peer_url:
        gateway.bench_instructions(tmp_path, peer_url, pg=False)
    printed = capsys.readouterr().out
    if not instructions.valgrind_present():
        assert "skipped: valgrind is not installed" in printed
        return
    floor = re.search(r"floor proxy +([0-9.]+) M", printed)
    hub = re.search(r"hub, SQLite +([0-9.]+) M +([0-9.]+)x the floor proxy", printed)
    assert floor is not None, printed
    assert hub is not None, printed
    assert float(floor.group(1)) > 0
    assert float(hub.group(1)) > 0


def test_the_gateway_bench_measures_the_protocol_layer_and_the_floor(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The echo dispatcher and the bare forwarding proxy answer the SDK client in both eras (a
    call that comes back an error raises)."""
    monkeypatch.setattr(gateway, "WARMUP", 1)
    monkeypatch.setattr(gateway, "ROUNDS", 3)
    env = hub_env("", tmp_path)
    with _peer(tmp_path) as peer_url:
        echo = [sys.executable, "-m", "bench._echo_dispatcher"]
        with served(echo, env, tmp_path / "echo.log") as port:
            asyncio.run(gateway.bench_protocol(f"http://127.0.0.1:{port}/mcp", peer_url))
        forward = [sys.executable, "-m", "bench._forward", "--upstream", peer_url]
        with served(forward, env, tmp_path / "forward.log") as port:
            asyncio.run(gateway.bench_floor(port, peer_url))
    printed = capsys.readouterr().out
    for era in gateway.ERAS:
        assert f"{era:<11} {'echo':<{gateway.CASE}} hub's " in printed
        assert f"{era:<11} {'echo':<{gateway.CASE}} proxy    " in printed
        assert f"{era:<11} {'echo':<{gateway.CASE}} proxy CPU per call " in printed


def test_the_sidecar_bench_calls_through_every_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sidecar, "WARMUP", 1)
    monkeypatch.setattr(sidecar, "ROUNDS", 3)
    sidecar.main()
    printed = capsys.readouterr().out
    for path in ("peer", "hub", "relay", "direct"):
        assert f"\n{path:<10}" in printed or printed.startswith(f"{path:<10}")
