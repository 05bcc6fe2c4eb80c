"""The conformance suite's client ``auth/*`` scenarios against the hub's OAuth client.

For each requirement set (``--requirements 2026-07-28`` and ``--requirements 2025-11-25`` of
``@modelcontextprotocol/conformance@0.2.0-alpha.12``) every ``auth/*`` scenario it lists —
scored or not — runs exactly as ``--requirements`` runs it (``--scenario S --spec-version REV
--force``), against :mod:`tests.oauth.conformance_auth_adapter`, with the expected-failures
baseline ``conformance_expected_failures.yml``. The runner's own verdict must be exit 0 (an
unlisted failure, or a listed scenario that now passes, exits 1); besides, a scenario passes
iff it is not listed, and every listed one is an unscored extension with a written reason.
Skipped only when npm is unavailable and ``HUB_TEST_REQUIRE_NODE`` is not ``1``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.peers.conformance import CONFORMANCE_PACKAGE, ConformanceResult, run_conformance_client
from tests.peers.fixtures import NodeTools
from tests.support.forkserver import fork_server

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
EXPECTED_FILE = HERE / "conformance_expected_failures.yml"
REVISIONS = ("2026-07-28", "2025-11-25")
ADAPTER_MODULE = "tests.oauth.conformance_auth_adapter"


def _requirements(tools: NodeTools, revision: str) -> dict[str, Any]:
    path = tools.package_entry(CONFORMANCE_PACKAGE).parents[1] / "requirements" / f"{revision}.yaml"
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def auth_scenarios(tools: NodeTools, revision: str) -> list[str]:
    """Every ``auth/*`` client scenario of the revision's requirement set, scored or not."""
    wanted = _requirements(tools, revision)
    scored = [s for s in wanted["client"] if s.startswith("auth/")]
    extra = [
        e["scenario"]
        for e in wanted.get("not_scored", [])
        if e.get("leg") == "client" and e["scenario"].startswith("auth/")
    ]
    return scored + extra


def expected_failures() -> tuple[list[str], dict[str, str]]:
    loaded = yaml.safe_load(EXPECTED_FILE.read_text())
    return list(loaded["client"]), dict(loaded["reasons"])


@pytest.fixture(scope="module")
def results(
    node_tools: NodeTools, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], ConformanceResult]:
    out_dir = tmp_path_factory.mktemp("auth-conformance")
    cases = [(s, rev) for rev in REVISIONS for s in auth_scenarios(node_tools, rev)]
    with fork_server(ADAPTER_MODULE) as server:  # the hub imported once, forked per scenario

        def run(case: tuple[str, str]) -> ConformanceResult:
            scenario, revision = case
            return run_conformance_client(
                scenario,
                server.command,
                revision,
                out_dir / revision,
                timeout_ms=60_000,
                tools=node_tools,
                extra_args=["--force", "--expected-failures", str(EXPECTED_FILE)],
            )

        with ThreadPoolExecutor(max_workers=3) as pool:
            return dict(zip(cases, pool.map(run, cases), strict=True))


def test_expected_failures_are_unscored_extensions_with_reasons(node_tools: NodeTools) -> None:
    listed, reasons = expected_failures()
    assert set(listed) == set(reasons)
    for revision in REVISIONS:
        extensions = {
            e["scenario"]
            for e in _requirements(node_tools, revision).get("not_scored", [])
            if e.get("reason") == "extension"
        }
        assert set(listed) <= extensions, revision
    assert all(reason.startswith("extension") for reason in reasons.values())


def test_every_auth_scenario_meets_the_baseline(
    results: dict[tuple[str, str], ConformanceResult],
) -> None:
    listed, _ = expected_failures()
    problems = []
    for (scenario, _revision), result in results.items():
        expected_to_fail = scenario in listed
        if result.exit_code != 0 or result.passed == expected_to_fail:
            problems.append(result.summary())
    assert not problems, "\n\n".join(problems)


def test_both_requirement_sets_were_run(results: dict[tuple[str, str], ConformanceResult]) -> None:
    revisions = {revision for _, revision in results}
    assert revisions == set(REVISIONS)
    assert sum(1 for _, r in results if r == "2026-07-28") >= 22 + 6
    assert sum(1 for _, r in results if r == "2025-11-25") >= 14 + 6
