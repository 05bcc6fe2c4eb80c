"""A hub whose stderr nobody reads keeps serving, and writes every line once it is read.

Before log lines had a thread of their own (``hub.core.log_writer``), the 283rd request's access
line filled the pipe and blocked the event loop: no request was answered after it, ``/healthz``
included. ``running_hub`` reads the hub's stderr only once the hub has stopped.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from tests.deploy.serving import running_hub
from tests.support.migrated import migrated_sqlite

REQUESTS = 1_000  # about 300 KB of access lines; a pipe holds 64 KiB


@pytest.mark.slow
def test_an_unread_stderr_stalls_nothing_and_loses_nothing(tmp_path: Path) -> None:
    migrated_sqlite(tmp_path / "hub.db")
    with running_hub(tmp_path) as hub, httpx2.Client(timeout=5) as client:
        ids = []
        for _ in range(REQUESTS):
            response = client.get(f"{hub.base_url}/healthz")
            assert response.status_code == 200
            ids.append(response.headers["x-request-id"])
    logged = {
        line.get("request_id") for line in hub.log_lines if line["logger"] == "uvicorn.access"
    }
    assert set(ids) <= logged  # written at exit, once the pipe was read
    assert not [line for line in hub.log_lines if "dropped_lines" in line]
