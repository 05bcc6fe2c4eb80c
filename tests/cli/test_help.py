"""``--help`` renders for every ``hub`` command and group (typer's own walk of the tree)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from hub.cli import app


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, sub in getattr(command, "commands", {}).items():  # a group (typer's own click)
        paths += _paths(sub, (*prefix, name))
    return paths


PATHS = _paths(typer.main.get_command(app))


def test_the_tree_holds_every_remote_command() -> None:
    names = {" ".join(p) for p in PATHS}
    for expected in [
        "login",
        "logout",
        "whoami",
        "tenants use",
        "principals create",
        "keys roll",
        "credentials update",
        "servers add",
        "catalogs snapshot",
        "catalogs diff",
        "deployments create",
        "deployments update",
        "deployments drift",
        "grants add",
        "grants check",
        "approvals list",
        "approvals show",
        "approvals approve",
        "approvals deny",
        "audit tail",
        "audit verify",
    ]:
        assert expected in names, expected
    for group in ["tenants", "principals", "credentials", "deployments"]:
        assert {f"{group} {verb}" for verb in ("list", "show", "create", "delete")} <= names


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "hub")
def test_help_renders(path: tuple[str, ...]) -> None:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    assert done.exit_code == 0, done.output
    assert "Usage:" in done.output
    assert "Traceback" not in done.output
