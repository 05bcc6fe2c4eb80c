"""The command a test gives an outside runner when the real command runs in a fork server.

``python -S tests/support/fork_launch.py SOCKET ARG...`` connects to a
:mod:`tests.support.forkserver` listening on ``SOCKET`` and hands it this process's standard
streams (as file descriptors), its arguments, environment and working directory; the server
forks a child that runs the command with them, and this process exits with the child's exit
code. Standard library only and started with ``-S``, so it starts in milliseconds: it is what
the runner times and kills. Killed, its connection closes and the child ends too.

It stands in for the child towards signals as well: SIGTERM, SIGINT and SIGHUP are passed on to
the child (the server sends its pid first), so a graceful shutdown runs in the child, and when
the child ends by such a signal (it sends no exit code) this process ends by the same signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _receive_int(connection: socket.socket) -> int | None:
    data = b""
    while len(data) < 4:
        chunk = connection.recv(4 - len(data))
        if not chunk:
            return None
        data += chunk
    value: int = struct.unpack("!i", data)[0]
    return value


def main(argv: list[str]) -> int:
    path, args = argv[1], argv[2:]
    message = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    forwarded: list[int] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        header = struct.pack("!I", len(message))
        socket.send_fds(connection, [header + message], [0, 1, 2])
        child = _receive_int(connection)
        if child is not None:

            def forward(signum: int, _frame: object) -> None:
                forwarded.append(signum)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signum)

            for signum in FORWARDED:
                signal.signal(signum, forward)
            code = _receive_int(connection)
            if code is not None:
                return code
    if forwarded:  # the child ended by the signal it was sent: so does this process
        signal.signal(forwarded[-1], signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    sys.stderr.write("fork_launch: the forked child ended without an exit code\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
