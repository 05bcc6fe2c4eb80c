"""``hub audit verify --local --after SEQ:HASH`` checks a restored database against a head
recorded before (an upgrade walk, stop 52: a restore rewinds the chain, and a check from the
start cannot tell a rewound chain from one that was never longer)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import uuid
from pathlib import Path

from hub.audit.actions import Action
from hub.audit.service import Entry, record_entries
from hub.core import clock
from hub.core.db import Database
from hub.core.migrations import upgrade
from tests.conftest import TEST_KEY, TEST_PEPPER
from tests.support.factories import make_tenant, scope_of
from tests.support.hubcommand import hub_argv


def _verify(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env.update(
        HUB_DATABASE_URL=f"sqlite+aiosqlite:///{path}",
        HUB_ENCRYPTION_KEYS=f"t1:{TEST_KEY}",
        HUB_API_KEY_PEPPER=TEST_PEPPER,
    )
    return subprocess.run(
        hub_argv("audit", "verify", "--local", *args),
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _head(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    chain = json.loads(done.stdout)
    return f"{chain['head_seq']}:{chain['head_hash']}"


async def test_a_restored_chain_is_checked_against_a_head_recorded_before(tmp_path: Path) -> None:
    live, backup = tmp_path / "hub.db", tmp_path / "backup.db"
    await asyncio.to_thread(upgrade, f"sqlite+aiosqlite:///{live}")
    db = Database.from_url(f"sqlite+aiosqlite:///{live}")
    try:
        tenant = scope_of((await make_tenant(db)).id)

        async def add(count: int) -> None:
            entries = [
                Entry(tenant, uuid.uuid4(), Action.TOOL_CALL, "r", None, "success", {}, clock.now())
                for _ in range(count)
            ]
            await record_entries(db, tenant, entries)

        await add(5)
        with sqlite3.connect(live) as source, sqlite3.connect(backup) as copy:
            source.backup(copy)  # the backup, at five rows
        await add(3)
    finally:
        await db.dispose()
    chain = ("--tenant", str(tenant.value), "--json")
    at_five, at_eight = _head(_verify(backup, *chain)), _head(_verify(live, *chain))

    assert _verify(backup, *chain).returncode == 0  # from the start, the restore looks whole
    rewound = _verify(backup, *chain, "--after", at_eight)
    assert rewound.returncode == 1, rewound.stdout
    assert json.loads(rewound.stdout)["reason"] == "missing_rows"
    since = _verify(live, *chain, "--after", at_five)
    assert (since.returncode, json.loads(since.stdout)["checked"]) == (0, 3)
    several = _verify(live, "--after", at_five)
    assert several.returncode == 2
    assert "--after checks one chain" in " ".join(several.stderr.split())
    garbled = _verify(live, *chain, "--after", "5:NOTHEX")
    assert garbled.returncode == 2
    assert "Traceback" not in garbled.stderr
