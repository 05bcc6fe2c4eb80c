"""``hub`` as a PID namespace's first process, as the image runs it (``ENTRYPOINT ["hub"]``).

The kernel drops a signal sent to such a process unless it has a handler for it, so a ``hub``
without one ignored ``docker stop``'s and Kubernetes' SIGTERM and was killed only at the end of
the grace period: a deleted migration Job, a ``hub db upgrade`` or a ``hub serve`` still checking
its database. ``unshare --pid --fork`` makes the same namespace here (the suite runs as root).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.workers import ROOT

UNSHARE = ["unshare", "--pid", "--fork", "--kill-child"]


def test_sigterm_stops_hub_as_the_first_process_of_its_namespace(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUB_")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.Popen(
        # `hub login` waits for the key on its stdin, which stays open: it blocks until a signal
        [*UNSHARE, sys.executable, "-m", "hub.cli", "login", "--url", "http://127.0.0.1:9"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 20
        while not children.read_text().split():
            assert time.monotonic() < deadline, "unshare started no process"
            time.sleep(0.05)
        [first] = [int(pid) for pid in children.read_text().split()]
        status = Path(f"/proc/{first}/status")
        while "\nSigCgt:\t0000000000000000" in status.read_text() or not _reads_stdin(first):
            assert time.monotonic() < deadline, "hub never got to its prompt"
            time.sleep(0.05)
        os.kill(first, signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdin is not None
        assert proc.stderr is not None
        proc.stdin.close()
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    assert "Traceback" not in stderr, stderr


def _reads_stdin(pid: int) -> bool:
    """The process waits in a read (its stack's syscall is read(2) on fd 0)."""
    try:
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return len(syscall) > 1 and syscall[0] == "0" and int(syscall[1], 16) == 0
