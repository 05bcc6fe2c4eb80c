"""The fork server behind the auth conformance scenarios' command (:mod:`tests.support.forkserver`).

The runner sees an ordinary command: its standard streams, arguments, environment, working
directory and exit code are the forked child's, killing it ends the child, and SIGTERM sent to
it reaches the child (a graceful shutdown runs; a child ended by the signal ends it the same way).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.forkserver import ForkServer, fork_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    with fork_server("tests.support.fork_echo") as running:
        yield running


def launch(server: ForkServer, *args: str, cwd: Path) -> subprocess.Popen[str]:
    argv = [*shlex.split(server.command), *args]
    env = {**os.environ, "FORK_ECHO": "from the launcher"}
    return subprocess.Popen(
        argv, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_the_child_runs_with_the_launchers_streams_arguments_environment_and_cwd(
    server: ForkServer, tmp_path: Path
) -> None:
    done = launch(server, "exit", "3", cwd=tmp_path)
    out, err = done.communicate(timeout=30)
    assert done.returncode == 3
    seen = json.loads(out)
    assert seen["argv"] == ["exit", "3"]
    assert seen["env"] == "from the launcher"
    assert seen["cwd"] == str(tmp_path)
    assert seen["ppid"] == server.process.pid  # forked by the server, which imported it first
    assert err == "to stderr\n"


def test_a_clean_exit_is_zero_and_children_are_independent(
    server: ForkServer, tmp_path: Path
) -> None:
    first = launch(server, "one", cwd=tmp_path)
    second = launch(server, "exit", "5", cwd=tmp_path)
    second_out, _ = second.communicate(timeout=30)
    first_out, _ = first.communicate(timeout=30)
    assert (first.returncode, second.returncode) == (0, 5)
    assert json.loads(first_out)["argv"] == ["one"]
    assert json.loads(second_out)["argv"] == ["exit", "5"]


def test_killing_the_launcher_ends_the_child(server: ForkServer, tmp_path: Path) -> None:
    launcher, child = _started(server, "wait", tmp_path)
    launcher.send_signal(signal.SIGKILL)
    launcher.communicate(timeout=10)
    _gone(child)


def _started(server: ForkServer, mode: str, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """The launcher of ``fork_echo MODE PID_FILE`` and its child's pid, once the child runs."""
    pid_file = tmp_path / "pid"
    launcher = launch(server, mode, str(pid_file), cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert launcher.poll() is None, launcher.communicate()
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    return launcher, int(pid_file.read_text())


def test_sigterm_to_the_launcher_is_a_graceful_shutdown_of_the_child(
    server: ForkServer, tmp_path: Path
) -> None:
    launcher, child = _started(server, "term", tmp_path)
    launcher.send_signal(signal.SIGTERM)
    out, _ = launcher.communicate(timeout=10)
    assert launcher.returncode == 7  # the child's handler ran and chose the exit code
    assert out.splitlines()[-1] == "terminated"
    _gone(child)


def test_a_child_ended_by_the_forwarded_signal_ends_the_launcher_by_it(
    server: ForkServer, tmp_path: Path
) -> None:
    launcher, child = _started(server, "die", tmp_path)
    launcher.send_signal(signal.SIGTERM)
    launcher.communicate(timeout=10)
    assert launcher.returncode == -signal.SIGTERM  # as a process killed by SIGTERM reports
    _gone(child)


def _gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, "the child outlived its launcher"
        time.sleep(0.05)


def test_a_server_whose_starter_was_killed_ends() -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    server_pid = int(starter.stdout.readline())
    assert _alive(server_pid)
    starter.kill()  # no chance to stop its server
    starter.communicate(timeout=10)
    _gone(server_pid)


STARTER = """
import time
from tests.support.forkserver import fork_server
with fork_server("tests.support.fork_echo") as server:
    print(server.process.pid, flush=True)
    time.sleep(60)
"""


def _alive(pid: int) -> bool:
    """Running: a zombie (ended, not yet reaped by whoever adopted it) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
