"""``/docs`` and ``/redoc`` render in a real browser that can reach nothing but the hub.

Headless Chromium (Debian's package; skipped where it is not installed) loads each page from a
live ``hub serve`` on loopback, with every host name resolving to nothing (and the pages' own CSP
allowing only the hub's origin), and the rendered DOM must hold the API's operations.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.deploy.serving import running_hub

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _rendered(url: str, tmp_path: Path) -> str:
    done = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'chromium'}",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # no name resolves
            "--virtual-time-budget=15000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout


@pytest.mark.slow
# CI installs chromium (.ci/run), so there a missing browser fails the test instead
@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="no chromium (apt-get install chromium)"
)
@pytest.mark.parametrize(
    ("page", "marker"), [("/docs", "opblock-summary-path"), ("/redoc", "operation/")]
)
def test_the_docs_render_with_no_network(tmp_path: Path, page: str, marker: str) -> None:
    with running_hub(tmp_path) as hub:
        dom = _rendered(hub.base_url + page, tmp_path)
    assert dom.count(marker) > 20, dom[:2000]  # the operations of the hub's own document
    assert "/tenants/{t}/principals" in dom
