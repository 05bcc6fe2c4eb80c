"""The command a test gives an outside runner when the real command runs in a fork server.

``python -S tests/support/fork_launch.py SOCKET ARG...`` connects to a
:mod:`tests.support.forkserver` listening on ``SOCKET`` and hands it this process's standard
streams (as file descriptors), its arguments, environment and working directory; the server
forks a child that runs the command with them, and this process exits with the child's exit
code. Standard library only and started with ``-S``, so it starts in milliseconds: it is what
the runner times and kills. Killed, its connection closes and the child ends too.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys


def main(argv: list[str]) -> int:
    path, args = argv[1], argv[2:]
    message = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        header = struct.pack("!I", len(message))
        socket.send_fds(connection, [header + message], [0, 1, 2])
        answer = b""
        while len(answer) < 4:
            chunk = connection.recv(4 - len(answer))
            if not chunk:
                sys.stderr.write("fork_launch: the forked child ended without an exit code\n")
                return 1
            answer += chunk
    code: int = struct.unpack("!i", answer)[0]
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
