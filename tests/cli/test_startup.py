"""What a ``hub`` command imports before it runs.

Every command imports the whole command tree (:mod:`hub.cli`), so a command module that imports
its own stack at the top makes every other command pay for it: the sidecar's MCP server and
client, the workers, the app's web stack and the settings once made each ``hub`` command start
in about 1.8 s, the remote client's included (measured, ``hub version``: 1.8 s before, 0.5 s
after). Each command imports its stack when it runs (the tests that run ``hub serve``, ``hub
worker``, ``hub sidecar`` and the rest as subprocesses show it is found); this pins the rest.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: none of these is needed to parse a command line or to run the remote client
HEAVY = (
    "fastapi",
    "sqlalchemy",
    "mcp",
    "pydantic_settings",
    "hub.sidecar.run",
    "hub.core.jobs",
    "hub.core.settings",
    "hub.app",
)


def test_the_command_tree_imports_no_command_stack() -> None:
    probe = (
        "import json, sys; import hub.cli; "
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == []
