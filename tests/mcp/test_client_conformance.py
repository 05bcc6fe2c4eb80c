"""The MCP conformance suite's client scenarios against ``hub mcp probe``/``call`` (the adapter).

``@modelcontextprotocol/conformance@0.2.0-alpha.12`` on the project-local Node 22 runs each
scenario's mock server on loopback and ``tests.mcp.conformance_adapter`` against it; a scenario
passes with exit 0, at least one check, and no check failed or warned (warnings fail the
suite's verdict too). The scenarios run concurrently, once per module. Skipped only when npm is
unavailable and ``HUB_TEST_REQUIRE_NODE`` is not ``1`` (CI sets it).
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.peers.conformance import ConformanceResult, run_conformance_client
from tests.peers.fixtures import NodeTools

pytestmark = pytest.mark.slow

SCENARIOS = [
    ("initialize", "2025-11-25"),
    ("tools_call", "2025-11-25"),
    ("tools_call", "2026-07-28"),
    ("request-metadata", "2026-07-28"),
    ("http-standard-headers", "2026-07-28"),
    ("http-custom-headers", "2026-07-28"),
    ("http-invalid-tool-headers", "2026-07-28"),
]
# The mock servers listen on loopback, so the hub's egress must be allowed to reach it.
ADAPTER = f"env HUB_ALLOW_LOOPBACK=true {sys.executable} -m tests.mcp.conformance_adapter"


@pytest.fixture(scope="module")
def results(
    node_tools: NodeTools, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], ConformanceResult]:
    out_dir = tmp_path_factory.mktemp("conformance")

    def run(case: tuple[str, str]) -> ConformanceResult:
        scenario, version = case
        return run_conformance_client(
            scenario, ADAPTER, version, out_dir / version, timeout_ms=30_000, tools=node_tools
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(SCENARIOS, pool.map(run, SCENARIOS), strict=True))


@pytest.mark.parametrize(("scenario", "version"), SCENARIOS)
def test_client_scenario_passes(
    results: dict[tuple[str, str], ConformanceResult], scenario: str, version: str
) -> None:
    result = results[(scenario, version)]
    assert result.passed, result.summary()
