"""The HTTP/1.1 protocol ``hub serve`` and ``hub sidecar --listen`` run: uvicorn's httptools
protocol, with Nagle's algorithm off and a bound on a request's head.

**The head is bounded** (found by sending it, stop 43). httptools (llhttp) sets no limit on the
request line and headers, and uvicorn adds none for it (its ``h11_max_incomplete_event_size`` is
h11's only). Before any authentication, one connection sent a 200 MiB header value and the
server held it all (VmRSS 38 → 308 MB), and another sent two million headers, each answered 200.
A few connections were enough to pass the chart's 512 MiB memory limit on every replica.

:class:`HubHttpToolsProtocol` counts the bytes a connection sends while a request's head is
incomplete, after each read is parsed, and past :data:`MAX_REQUEST_HEAD_BYTES` answers 431 (a
head that arrives whole in one read is measured when it is parsed, and answered 431 the same);
what the server holds for one head is then at most the bound and one read. It then closes its side
and reads on for :data:`LINGER_S`, discarding, before it closes the connection: closing a socket
with unread bytes sends a reset, and the client would lose the 431 before reading it.

A read that completes a message and starts the next is not counted against the next (the bytes
of the earlier body cannot be told apart), so a pipelined head gets one read more. Trailers of a
chunked body arrive after the head; the body's own bound (the request middleware's 413) ends
such a request first. The sidecar's ``--listen`` server runs the same protocol: its token is
read after the headers.

**The head is timed** too. uvicorn's keep-alive timer stops at a connection's first byte and
nothing starts again until a response: a head sent a header a few seconds apart was read for as
long as it took (probed: 28 s of 7 s gaps, then served). Once a read leaves a head incomplete,
the rest must arrive within :data:`HEAD_TIMEOUT_S`, or the connection gets a 408 and is closed.
A head that arrives in one read, as nearly every head does, starts no timer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HEAD_TIMEOUT_S", "LINGER_S", "MAX_REQUEST_HEAD_BYTES", "HubHttpToolsProtocol"]

#: The request line and headers together. Browsers and proxies send a few kilobytes; nginx
#: refuses past 32 KiB by default, Node.js past 16 KiB.
MAX_REQUEST_HEAD_BYTES = 64 * 1024
#: How long a refused connection's further bytes are read and discarded before it is closed.
LINGER_S = 2.0
#: How long a request's head may take to arrive once its first read left it incomplete.
HEAD_TIMEOUT_S = 10.0

logger = logging.getLogger(__name__)


def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def _raw_response(status: bytes, body: bytes) -> bytes:
    return b"".join(
        [
            b"HTTP/1.1 " + status + b"\r\n",
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
            body,
        ]
    )


_BODY = _error_body(
    "headers_too_large",
    f"the request line and headers are larger than {MAX_REQUEST_HEAD_BYTES} bytes",
)
_REFUSAL = _raw_response(b"431 Request Header Fields Too Large", _BODY)
_TIMED_OUT = _raw_response(
    b"408 Request Timeout",
    _error_body("request_timeout", f"the request's head took longer than {HEAD_TIMEOUT_S:g} s"),
)


def _head_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed head, near enough: request line, ``name: value`` lines, blank line."""
    return len(url) + 16 + sum(len(name) + len(value) + 4 for name, value in headers) + 2


async def _head_too_large(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a head past the bound that was parsed whole (``connection: close``)."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_BODY)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 431, "headers": headers})
    await send({"type": "http.response.body", "body": _BODY})


class HubHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with ``TCP_NODELAY`` on every connection and a bounded head.

    An event loop turns Nagle's algorithm off only on sockets whose protocol field says TCP, and
    a listening socket made without it (``--workers N`` binds its own) says 0: its connections
    would then hold a response's second write until the client's delayed ACK, 40 ms a response.
    """

    _in_head = True  # the connection waits for a request's head
    _head_bytes = 0  # bytes read while this head is incomplete
    _head_began = False  # a message completed in the read being parsed
    _refused = False  # the head passed the bound: what arrives now is discarded
    _may_pass = False  # the read being parsed could complete a head past the bound
    _head_timer: asyncio.TimerHandle | None = None  # set while a head is incomplete
    head_timeout_s = HEAD_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._head_began = False
        self._may_pass = self._head_bytes + len(data) > MAX_REQUEST_HEAD_BYTES
        super().data_received(data)
        if self._in_head and not self._head_began:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_REQUEST_HEAD_BYTES and not self.transport.is_closing():
                self._refuse()
            elif self._head_timer is None:
                loop = asyncio.get_running_loop()
                self._head_timer = loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self._refused and not self.transport.is_closing():
            logger.warning("http: a request's head did not arrive in time; refused with 408")
            self.transport.write(_TIMED_OUT)
            self.transport.close()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _refuse(self) -> None:
        logger.warning(
            "http: a request's head passed the bound; refused with 431",
            extra={"head_bytes": self._head_bytes},
        )
        self._refused = True
        self.transport.write(_REFUSAL)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_S, self.transport.close)

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head_timer is not None:  # (a head that came in one read started none)
            self._stop_head_timer()
        if self._may_pass and _head_size(self.url, self.headers) > MAX_REQUEST_HEAD_BYTES:
            # a head that arrived whole in one large read: answered by an app of its own, as
            # uvicorn answers 503 past its concurrency limit, and the connection closed after it
            logger.warning("http: a request's head passed the bound; refused with 431")
            app, self.app = self.app, _head_too_large
            try:
                super().on_headers_complete()
            finally:
                self.app = app
            return
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head, self._head_bytes, self._head_began = True, 0, True
        super().on_message_complete()
