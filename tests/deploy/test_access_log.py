"""A served hub's access line keeps a query's parameter names, never their values.

The authorization server sends the browser back to ``/oauth/callback?code=…&state=…``; uvicorn's
access line would carry the live code and its state into every log store (DESIGN §11: secrets
never logged). A real ``hub serve`` gets the callback and an ordinary list query.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from tests.deploy.serving import running_hub
from tests.support.migrated import migrated_sqlite

CODE = "CANARY-authorization-code-0417"
STATE = "CANARY-state-9921"


@pytest.mark.slow
def test_query_values_never_reach_the_access_line(tmp_path: Path) -> None:
    migrated_sqlite(tmp_path / "hub.db")
    with running_hub(tmp_path) as hub:
        callback = httpx2.get(
            f"{hub.base_url}/oauth/callback", params={"code": CODE, "state": STATE}, timeout=5
        )
        plain = httpx2.get(f"{hub.base_url}/healthz", timeout=5)
    assert callback.status_code == 400  # an unknown state: refused before any token request
    lines = {
        line.get("request_id"): line for line in hub.log_lines if line["logger"] == "uvicorn.access"
    }
    logged = lines[callback.headers["x-request-id"]]["message"]
    assert '"GET /oauth/callback?code=[redacted]&state=[redacted] HTTP/1.1" 400' in logged
    assert '"GET /healthz HTTP/1.1" 200' in lines[plain.headers["x-request-id"]]["message"]
    everything = "\n".join(str(line) for line in hub.log_lines)
    assert CODE not in everything
    assert STATE not in everything
