"""``python -m bench._sdk_peer …``: ``tests.peers.sdk_server`` with ``TCP_NODELAY`` on its sockets.

The peer binds its listening socket as ``socket.socket(family, SOCK_STREAM)`` (``proto`` 0), and
asyncio sets ``TCP_NODELAY`` only on accepted sockets whose ``proto`` is ``IPPROTO_TCP``. Without
it, Nagle's algorithm holds every JSON body behind its already-sent headers until the client's
delayed ACK (about 40 ms on Linux) on each reused connection, a stall that would swamp what
``bench.discover`` measures. This shim creates stream sockets with ``IPPROTO_TCP`` and then runs
the peer's own ``main()`` unchanged (a no-op once the peer passes the protocol itself).
"""

from __future__ import annotations

import socket

from tests.peers import sdk_server

_BaseSocket = socket.socket


class _TcpSocket(_BaseSocket):
    def __init__(
        self,
        family: int = socket.AF_INET,
        type: int = socket.SOCK_STREAM,
        proto: int = 0,
        fileno: int | None = None,
    ) -> None:
        stream = family in (socket.AF_INET, socket.AF_INET6) and type == socket.SOCK_STREAM
        if fileno is None and stream and proto == 0:
            proto = socket.IPPROTO_TCP
        super().__init__(family, type, proto, fileno)


if __name__ == "__main__":
    setattr(socket, "socket", _TcpSocket)  # noqa: B010 - mypy refuses assigning to a class
    sdk_server.main()
