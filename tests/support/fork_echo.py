"""The command :mod:`tests.peers.test_forkserver` runs through a fork server.

``ARG...``: prints one JSON line of what it was given (arguments, ``FORK_ECHO`` from the
environment, working directory, parent pid) and writes ``to stderr`` on stderr; then ``exit N``
exits with N, ``wait FILE`` writes its pid to FILE and sleeps (for the launcher to be killed),
``term FILE`` does the same but on SIGTERM prints ``terminated`` and exits with 7 (a graceful
shutdown), ``die FILE`` keeps SIGTERM's default action (it ends by the signal).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def _graceful(_signum: int, _frame: object) -> None:
    sys.stdout.write("terminated\n")
    sys.stdout.flush()
    sys.exit(7)


def main(argv: list[str]) -> int:
    seen = {"argv": argv, "env": os.environ.get("FORK_ECHO"), "cwd": os.getcwd()}
    sys.stdout.write(json.dumps({**seen, "ppid": os.getppid()}) + "\n")
    sys.stdout.flush()
    sys.stderr.write("to stderr\n")
    if argv[:1] == ["term"]:
        signal.signal(signal.SIGTERM, _graceful)
    if argv[:1] == ["die"]:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if argv[:1] in (["wait"], ["term"], ["die"]):
        Path(argv[1]).write_text(str(os.getpid()))
        time.sleep(60)
    return int(argv[1]) if argv[:1] == ["exit"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
