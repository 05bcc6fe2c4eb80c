"""A warm fork server for a command the tests (or an outside runner) start many times.

The conformance suite's client scenarios each start their command afresh (``<command>
<server-url>``); for the auth scenarios that command drives a whole hub in process, and importing
the hub costs about 2.3 s of CPU per start, some fifty starts per test run. The SDK peers
(:func:`tests.peers.fixtures.sdk_peer`) and the ``hub`` commands of the live-hub tests
(:mod:`tests.support.hubcommand`) are started the same way. Here one process
imports the command's module once (``python -m tests.support.forkserver SOCKET MODULE``) and
forks a child per start: the runner is given :data:`ForkServer.command`, a standard-library-only
launcher (:mod:`tests.support.fork_launch`) that passes its standard streams, arguments,
environment and working directory over a Unix socket, and exits with the child's exit code. The
child runs ``MODULE`` as ``__main__`` with ``sys.argv`` set, as ``python -m MODULE ARG...``
would.

The server never runs an event loop, and importing the module must start no thread (checked
before it listens), so a fork copies no lock held by another thread; a child's SIGCHLD
disposition is the default again. A child whose launcher is gone
(the runner killed it at its timeout) ends at once: it watches the connection for end-of-file.
A server whose starter is gone (a test worker killed before it could stop it) ends within
:data:`PARENT_CHECK_S`. The child sends its pid first, and the launcher passes SIGTERM, SIGINT
and SIGHUP on to it, so a test that stops the launcher with a signal stops the child the same
way; the child's process group is the server's, so a signal to the launcher's group reaches it
only so.

Written here rather than taken from a library: ``multiprocessing``'s forkserver forks for
Python callables of the parent, not for an outside program's command line and its streams.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["ForkServer", "fork_server"]

LAUNCHER = Path(__file__).with_name("fork_launch.py")
REPO_ROOT = Path(__file__).resolve().parents[2]
READY = "fork server ready"
#: how often an idle server checks that the process that started it is still there
PARENT_CHECK_S = 1.0


class ForkServer:
    """A running fork server for one module; :attr:`command` is what the runner starts."""

    def __init__(self, socket_path: Path, process: subprocess.Popen[str]) -> None:
        self.socket_path = socket_path
        self.process = process

    @property
    def argv(self) -> list[str]:
        """The launcher's command line, to which the module's own arguments are appended."""
        return [sys.executable, "-S", str(LAUNCHER), str(self.socket_path)]

    @property
    def command(self) -> str:
        return " ".join(self.argv)


@contextlib.contextmanager
def fork_server(module: str, *preload: str) -> Iterator[ForkServer]:
    """Start a fork server for ``module`` (imported once, before the first fork, with the
    ``preload`` modules the command would import when it runs); stop it after."""
    with tempfile.TemporaryDirectory(prefix="fork") as tmp:  # short: a socket path is <108 bytes
        socket_path = Path(tmp) / "s"
        argv = [sys.executable, "-m", "tests.support.forkserver", str(socket_path), module]
        argv += preload
        process = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if line.strip() != READY:
                raise RuntimeError(f"the fork server for {module} did not start: {line!r}")
            yield ForkServer(socket_path, process)
        finally:
            process.terminate()
            process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 20, 3)
    if len(data) < 4 or len(fds) != 3:
        raise RuntimeError("the launcher sent no request")
    (length,) = struct.unpack("!I", data[:4])
    body = data[4:]
    while len(body) < length:
        chunk = connection.recv(length - len(body))
        if not chunk:
            raise RuntimeError("the launcher's request was cut short")
        body += chunk
    request: dict[str, Any] = json.loads(body)
    return request, fds


def _end_with_launcher(connection: socket.socket) -> None:
    """In the child: the launcher never sends again, so end-of-file means it is gone."""
    try:
        connection.recv(1)
    finally:
        os._exit(1)


def _child(connection: socket.socket, module: str) -> int:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    request, fds = _receive(connection)
    connection.sendall(struct.pack("!i", os.getpid()))  # the launcher passes signals on to it
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = [module, *request["argv"]]
    if not hasattr(sys.modules[module], "__path__"):  # a package runs its __main__, not itself
        sys.modules.pop(module)  # run afresh as __main__; what it imports stays imported
    threading.Thread(target=_end_with_launcher, args=(connection,), daemon=True).start()
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    connection.sendall(struct.pack("!i", code))
    return code


def serve(socket_path: str, module: str, *preload: str) -> None:
    for name in (module, *preload):
        importlib.import_module(name)
    if threading.active_count() != 1:
        names = ", ".join((module, *preload))
        raise RuntimeError(f"importing {names} started a thread: forking it is not safe")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    parent = os.getppid()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(socket_path)
        listener.listen(64)
        listener.settimeout(PARENT_CHECK_S)
        sys.stdout.write(READY + "\n")
        sys.stdout.flush()
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                if os.getppid() != parent:  # the test process is gone (killed): so is its server
                    return
                continue
            connection.settimeout(None)
            if os.fork() == 0:
                listener.close()
                code = 1
                try:
                    code = _child(connection, module)
                finally:
                    os._exit(code)
            connection.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], *sys.argv[3:])
