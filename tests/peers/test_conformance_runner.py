"""The conformance toolchain (Node 22 + @modelcontextprotocol/conformance) runs end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.peers.conformance import run_conformance_client
from tests.peers.fixtures import NodeTools

TOY_CLIENT = f"{sys.executable} -m tests.peers.toy_client"


def test_node_tools_are_node_22(node_tools: NodeTools) -> None:
    version = subprocess.run(
        [str(node_tools.node), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert version.startswith("v22.")


@pytest.mark.parametrize(
    ("scenario", "spec_version"),
    [("initialize", "2025-11-25"), ("request-metadata", "2026-07-28")],
)
def test_toy_client_passes_a_scenario(
    node_tools: NodeTools, tmp_path: Path, scenario: str, spec_version: str
) -> None:
    result = run_conformance_client(
        scenario, TOY_CLIENT, spec_version, tmp_path, timeout_ms=20_000, tools=node_tools
    )
    assert result.passed, result.summary()
    assert result.result_dir is not None
    assert (result.result_dir / "checks.json").exists()
    assert all(c.status in ("SUCCESS", "INFO", "SKIPPED") for c in result.checks)


def test_a_failing_client_is_reported(node_tools: NodeTools, tmp_path: Path) -> None:
    # The toy client lists tools but never calls one.
    result = run_conformance_client(
        "tools_call", TOY_CLIENT, "2025-11-25", tmp_path, timeout_ms=20_000, tools=node_tools
    )
    assert not result.passed
    assert result.exit_code == 1
    assert [c.id for c in result.failures] == ["tool-add-numbers"]
    assert '"add_numbers"' in result.client_output()


def test_a_scenario_from_another_revision_is_skipped(node_tools: NodeTools, tmp_path: Path) -> None:
    result = run_conformance_client(
        "request-metadata", TOY_CLIENT, "2025-11-25", tmp_path, tools=node_tools
    )
    assert result.skipped
    assert not result.passed
