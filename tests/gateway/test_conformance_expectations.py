"""The conformance server suite's expected failures say why, each of them (issue 14).

``tests/gateway/test_conformance_server.py`` runs the suite (slow, Node) with a baseline per
requirement set written from ``conformance-expected-failures-<set>.yaml``. Checked here without
running anything: every entry is an ``id`` (a scenario, or ``scenario:check-id``) with its own
non-empty ``reason`` that cites the contract (DESIGN), no id is listed twice or also as a check
of a scenario listed whole, the runner's baseline holds exactly the ids, and — when the
conformance package is installed (its requirement sets are plain files) — every id names a
scenario the requirement set scores, since the runner ignores an entry for a scenario it does
not score instead of reporting it stale.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gateway.test_conformance_server import (
    REQUIREMENT_SETS,
    expected_failure_entries,
    expected_failures,
    runner_baseline,
)
from tests.peers.conformance import CONFORMANCE_PACKAGE
from tests.peers.fixtures import NODE_DIR

ID = re.compile(r"^[a-z0-9][a-z0-9-]*(:[a-z0-9][a-z0-9-]*)?$")


def _scenario(entry_id: str) -> str:
    return entry_id.split(":", 1)[0]


@pytest.mark.parametrize("requirements", REQUIREMENT_SETS)
def test_every_expected_failure_has_its_own_reason_and_a_unique_id(requirements: str) -> None:
    assert expected_failures(requirements).is_file()
    entries = expected_failure_entries(requirements)
    assert entries, requirements
    for entry in entries:
        assert ID.match(entry.id), f"{entry.id!r} is not 'scenario' or 'scenario:check-id'"
        assert entry.reason.strip(), f"{entry.id}: no reason"
        assert "DESIGN §" in entry.reason, f"{entry.id}: the reason cites no DESIGN section"
    twice = [i for i, n in Counter(e.id for e in entries).items() if n > 1]
    assert not twice, f"listed twice: {twice}"
    whole = {e.id for e in entries if ":" not in e.id}
    redundant = [e.id for e in entries if ":" in e.id and _scenario(e.id) in whole]
    assert not redundant, f"checks of a scenario listed whole: {redundant}"


@pytest.mark.parametrize("requirements", REQUIREMENT_SETS)
def test_the_runners_baseline_is_the_ids_alone(requirements: str, tmp_path: Path) -> None:
    written = yaml.safe_load(runner_baseline(requirements, tmp_path).read_text())
    assert written == {"server": [e.id for e in expected_failure_entries(requirements)]}


def _scored_server_scenarios(requirements: str) -> list[str]:
    path = NODE_DIR / "node_modules" / CONFORMANCE_PACKAGE / "requirements" / f"{requirements}.yaml"
    if not path.is_file():
        if os.environ.get("HUB_TEST_REQUIRE_NODE") == "1":
            pytest.fail(f"Node tools are required (HUB_TEST_REQUIRE_NODE=1) but {path} is missing")
        pytest.skip(f"the conformance package is not installed ({path})")
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return list(loaded["server"])


@pytest.mark.parametrize("requirements", REQUIREMENT_SETS)
def test_every_expected_failure_names_a_scenario_the_set_scores(requirements: str) -> None:
    scored = set(_scored_server_scenarios(requirements))
    unknown = [
        e.id for e in expected_failure_entries(requirements) if _scenario(e.id) not in scored
    ]
    assert not unknown, f"not scored by --requirements {requirements}: {unknown}"
