"""The command :mod:`tests.peers.test_forkserver` runs through a fork server.

``ARG...``: prints one JSON line of what it was given (arguments, ``FORK_ECHO`` from the
environment, working directory, parent pid) and writes ``to stderr`` on stderr; then ``exit N``
exits with N, ``wait FILE`` writes its pid to FILE and sleeps (for the launcher to be killed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    seen = {"argv": argv, "env": os.environ.get("FORK_ECHO"), "cwd": os.getcwd()}
    sys.stdout.write(json.dumps({**seen, "ppid": os.getppid()}) + "\n")
    sys.stdout.flush()
    sys.stderr.write("to stderr\n")
    if argv[:1] == ["wait"]:
        Path(argv[1]).write_text(str(os.getpid()))
        time.sleep(60)
    return int(argv[1]) if argv[:1] == ["exit"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
