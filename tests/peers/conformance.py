"""Run ``@modelcontextprotocol/conformance`` client scenarios and read their results.

The suite is installed project-locally in ``tests/peers/node`` (``setup.sh``) and runs on the Node
22 binary of the ``node`` npm package (it needs Node >= 22: it imports ``fs.globSync``)::

    <node22> --require loopback.cjs node_modules/@modelcontextprotocol/conformance/dist/index.js \\
        client --command "<command>" --scenario <s> --spec-version <v> -o <dir> [--timeout ms]

(``loopback.cjs`` binds the suite's mock servers, which listen on every interface, to 127.0.0.1.)

How the runner invokes ``command`` (read from its ``dist/index.js``, 0.2.0-alpha.12):

- It starts a mock server for the scenario (on ``http://localhost:<port>``, no path; some
  scenarios add a path) and runs ``command`` once.
- ``command`` is split on single spaces; the server URL is appended as the **last argv** and
  the whole is spawned **through a shell** (``spawn(argv0, rest, {shell: true})``). So keep
  paths free of spaces and shell metacharacters; no quoting survives the split.
- Environment: the runner's own environment plus ``MCP_CONFORMANCE_SCENARIO`` (the scenario
  name), ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (the wire version the client must speak:
  ``--spec-version``, else the scenario's own revision, ``2025-11-25`` or ``2026-07-28``) and, for
  scenarios with data, ``MCP_CONFORMANCE_CONTEXT`` (JSON: ``{"name": <scenario>, ...}``, e.g.
  ``client_id``/``client_secret`` for ``auth/pre-registration``).
- The client is killed after ``--timeout`` ms (default 30000). Its exit code counts: non-zero fails
  the run unless the scenario expects client errors.
- Results go to ``<dir>/<scenario>-<ISO timestamp with : and . replaced by ->/`` (a scenario name
  with ``/``, like ``auth/metadata-default``, nests a folder): ``checks.json`` (a list of
  ``{id, name, description, status, timestamp, errorMessage?, specReferences?, details?}`` with
  ``status`` in ``SUCCESS``/``FAILURE``/``WARNING``/``SKIPPED``/``INFO``), ``stdout.txt`` and
  ``stderr.txt`` (the client's output). A synthetic ``wire-schema-valid`` check validates every
  message the client sent against the revision's schema.
- A scenario not applicable at ``--spec-version`` is skipped: exit 0, ``SKIPPED: ...`` on stdout and
  no result folder.

A passing result: exit code 0, at least one check, none with status ``FAILURE`` or ``WARNING``
(warnings fail the overall verdict: "✅ OVERALL: PASSED" on stderr, otherwise "❌ OVERALL:
FAILED"). ``ConformanceResult.passed`` applies exactly that rule.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.peers.fixtures import REPO_ROOT, NodeTools, ensure_node_tools

CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"


@dataclass(frozen=True)
class Check:
    id: str
    name: str
    status: str
    description: str = ""
    error_message: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Check:
        return cls(
            id=str(raw.get("id", "")),
            name=str(raw.get("name", "")),
            status=str(raw.get("status", "")),
            description=str(raw.get("description", "")),
            error_message=raw.get("errorMessage"),
            raw=raw,
        )


@dataclass(frozen=True)
class ConformanceResult:
    scenario: str
    spec_version: str
    exit_code: int
    checks: list[Check]
    result_dir: Path | None
    stdout: str
    stderr: str
    skipped: bool

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "FAILURE"]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status == "WARNING"]

    @property
    def passed(self) -> bool:
        return (
            self.exit_code == 0
            and not self.skipped
            and bool(self.checks)
            and not self.failures
            and not self.warnings
        )

    def client_output(self) -> str:
        """What the client under test printed (``stdout.txt`` + ``stderr.txt``)."""
        if self.result_dir is None:
            return ""
        return "".join(
            (self.result_dir / name).read_text(errors="replace")
            for name in ("stdout.txt", "stderr.txt")
            if (self.result_dir / name).exists()
        )

    def summary(self) -> str:
        lines = [
            f"{self.scenario} @ {self.spec_version}: exit {self.exit_code}, "
            f"{len(self.checks)} checks, {len(self.failures)} failed, "
            f"{len(self.warnings)} warnings{', skipped' if self.skipped else ''}"
        ]
        lines += [
            f"  {c.status} {c.name}: {c.error_message or c.description}"
            for c in self.checks
            if c.status in ("FAILURE", "WARNING")
        ]
        if not self.passed:
            lines += ["--- runner stderr ---", self.stderr[-4000:]]
            lines += ["--- client output ---", self.client_output()[-4000:]]
        return "\n".join(lines)


def _newest_checks(out_dir: Path, scenario: str) -> Path | None:
    prefix = scenario.rsplit("/", 1)[-1] + "-"
    candidates = [
        p
        for p in out_dir.rglob("checks.json")
        if p.parent.name.startswith(prefix)
        and p.parent.relative_to(out_dir).as_posix().startswith(scenario + "-")
    ]
    return max(candidates, key=lambda p: p.stat().st_mtime, default=None)


def run_conformance_client(
    scenario: str,
    command: str,
    spec_version: str,
    out_dir: Path,
    *,
    timeout_ms: int = 30_000,
    cwd: Path = REPO_ROOT,
    tools: NodeTools | None = None,
    extra_args: list[str] | None = None,
) -> ConformanceResult:
    """Run one client scenario against ``command`` and parse its ``checks.json``.

    ``cwd`` is where the command runs (the repository root by default, so
    ``python -m tests.peers.toy_client`` resolves). ``extra_args`` go to the runner (e.g.
    ``--force``, ``--expected-failures F``). Blocking: call it from a sync test or via
    ``asyncio.to_thread``.
    """
    tools = tools or ensure_node_tools()
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        str(tools.node),
        "--require",
        str(tools.directory / "loopback.cjs"),
        str(tools.package_entry(CONFORMANCE_PACKAGE)),
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        "--spec-version",
        spec_version,
        "--timeout",
        str(timeout_ms),
        "-o",
        str(out_dir),
        *(extra_args or []),
    ]
    done = subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, "HUB_PEER_HOST": "127.0.0.1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout_ms / 1000 + 60,
    )
    checks_file = _newest_checks(out_dir, scenario)
    checks: list[Check] = []
    if checks_file is not None:
        checks = [Check.from_json(c) for c in json.loads(checks_file.read_text())]
    return ConformanceResult(
        scenario=scenario,
        spec_version=spec_version,
        exit_code=done.returncode,
        checks=checks,
        result_dir=checks_file.parent if checks_file else None,
        stdout=done.stdout,
        stderr=done.stderr,
        skipped=checks_file is None and "SKIPPED" in done.stdout,
    )
