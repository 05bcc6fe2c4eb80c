"""Running the ``hub`` command against a live ``hub serve`` on a random loopback port.

:func:`live_hub` puts a migrated SQLite database in the test's directory
(:mod:`tests.support.migrated`), bootstraps a platform admin, starts ``hub serve``
(``tests.deploy.serving``) and yields a :class:`LiveHub`;
``hub.cli(...)`` runs ``python -m hub.cli`` as an operator would from a shell — a subprocess
with its own ``XDG_CONFIG_HOME`` (so profiles never touch the real home), stdin when given, and
no key anywhere on its command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.deploy.serving import RunningHub, free_port, hub_command, running_hub
from tests.support.hubcommand import hub_argv
from tests.support.migrated import migrated_sqlite

__all__ = ["CliResult", "LiveHub", "live_hub", "tenant_with_owner"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error_lines(self) -> list[str]:
        """stderr lines that are not the hub's JSON log lines."""
        return [line for line in self.stderr.splitlines() if not line.startswith("{")]


@dataclass
class LiveHub:
    server: RunningHub
    workdir: Path
    platform_key: str

    @property
    def url(self) -> str:
        return self.server.base_url

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
        env.update({"XDG_CONFIG_HOME": str(self.workdir / "config"), "COLUMNS": "200"})
        env.update(extra)
        return env

    def cli_sync(self, *args: str, stdin: str | None = None, **env: str) -> CliResult:
        done = subprocess.run(
            hub_argv(*args),
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env=self.env(**env),
            cwd=self.workdir,
            timeout=120,
            check=False,
        )
        return CliResult(done.returncode, done.stdout, done.stderr)

    async def cli(self, *args: str, stdin: str | None = None, **env: str) -> CliResult:
        """The command in a worker thread, so peers serving in the test's loop keep serving."""
        return await asyncio.to_thread(lambda: self.cli_sync(*args, stdin=stdin, **env))

    async def ok(self, *args: str, stdin: str | None = None, **env: str) -> CliResult:
        """Run and require exit 0."""
        done = await self.cli(*args, stdin=stdin, **env)
        assert done.code == 0, (args, done.stdout, done.stderr)
        return done


@contextlib.contextmanager
def live_hub(tmp_path: Path, **settings: str) -> Iterator[LiveHub]:
    """A migrated, bootstrapped ``hub serve`` (settings as ``HUB_…`` names)."""
    port = free_port()  # unused by these two commands; hub_env wants one
    migrated_sqlite(tmp_path / "hub.db")
    key = hub_command(tmp_path, port, "bootstrap", **settings).strip()
    with running_hub(tmp_path, **settings) as server:
        yield LiveHub(server, tmp_path, key)


async def tenant_with_owner(hub: LiveHub) -> None:
    """Tenant ``acme`` made by the platform admin (the default profile, using ``acme``), its
    tenant admin ``owner`` logged in as profile ``owner``, and an agent ``bot``."""
    await hub.ok("login", "--url", hub.url, HUB_API_KEY=hub.platform_key)
    await hub.ok("tenants", "create", "acme")
    await hub.ok("tenants", "use", "acme")
    await hub.ok("principals", "create", "owner", "--role", "tenant_admin")
    await hub.ok("principals", "create", "bot", "--kind", "agent", "--role", "agent")
    key = (await hub.ok("keys", "create", "owner")).stdout.strip()
    await hub.ok("login", "--url", hub.url, "--profile", "owner", HUB_API_KEY=key)
