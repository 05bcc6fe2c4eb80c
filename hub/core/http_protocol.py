"""The HTTP/1.1 protocol ``hub serve`` and ``hub sidecar --listen`` run: uvicorn's httptools
protocol, with Nagle's algorithm off, a bound on a request's head, and a bound on the
connections a process holds (:mod:`hub.core.connection_bound`).

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

**The body is timed**, and what incomplete requests hold is bounded (found by sending it, stop
44). A POST with any well-formed key (its checksum is public: no secret needed) is read whole
before it is authenticated, as FastAPI reads every body before a route's dependencies; nothing
timed the body's arrival. One hundred connections each sent 2 MiB less a few bytes and stalled:
``hub serve``'s VmRSS went from 124 to 331 MB and stayed there, connections open, 40 s later.
Under 200 such connections pass the chart's 512 MiB limit. So:

- A body still incomplete :data:`BODY_TIMEOUT_S` after its head gets a 408 and the connection
  closes. Time the server itself stopped reading (an app that has not yet taken what it was
  sent, a pipelined request waiting its turn) does not count: the client is not the slow one.
- The bytes of every request a process has begun and not wholly received, heads and bodies,
  across its connections, are counted in one :class:`PendingBytes` (``HUB_MAX_PENDING_REQUEST_
  BYTES``, 64 MiB by default). A read that finds the count past it gets a 503 ``server_busy``
  and its connection is closed. A request that arrives in one read, as nearly every request
  does, is never counted, so it is served whatever the count; what the count refuses is the
  next slow or large request, while the budget is full, until its holders finish or time out.

Each of these answers, and the 400 of bytes httptools cannot parse (uvicorn's was ``text/plain``),
is the hub's JSON error body with a request id of its own (:mod:`hub.core.http_refusals`).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hub.core.connection_bound import BOUND, ConnectionBound
from hub.core.http_refusals import Refusal

__all__ = [
    "BODY_TIMEOUT_S",
    "HEAD_TIMEOUT_S",
    "LINGER_S",
    "MAX_PENDING_REQUEST_BYTES",
    "MAX_REQUEST_HEAD_BYTES",
    "PENDING",
    "HubHttpToolsProtocol",
    "PendingBytes",
    "limit_pending_requests",
]

#: The request line and headers together. Browsers and proxies send a few kilobytes; nginx
#: refuses past 32 KiB by default, Node.js past 16 KiB.
MAX_REQUEST_HEAD_BYTES = 64 * 1024
#: How long a refused connection's further bytes are read and discarded before it is closed.
LINGER_S = 2.0
#: How long a request's head may take to arrive once its first read left it incomplete.
HEAD_TIMEOUT_S = 10.0
#: How long a request's body may take to arrive once its head has (2 MiB in 30 s is 70 kB/s).
BODY_TIMEOUT_S = 30.0
#: The default bound of the bytes of begun, incomplete requests a process holds
#: (``HUB_MAX_PENDING_REQUEST_BYTES``).
MAX_PENDING_REQUEST_BYTES = 64 * 1024 * 1024

_HEAD_TOO_LARGE = Refusal(
    b"431 Request Header Fields Too Large",
    "headers_too_large",
    f"the request line and headers are larger than {MAX_REQUEST_HEAD_BYTES} bytes",
)
_TIMED_OUT = Refusal(
    b"408 Request Timeout",
    "request_timeout",
    f"the request's head took longer than {HEAD_TIMEOUT_S:g} s",
)
_BODY_TIMED_OUT = Refusal(
    b"408 Request Timeout",
    "request_timeout",
    f"the request's body took longer than {BODY_TIMEOUT_S:g} s",
)
_BUSY = Refusal(
    b"503 Service Unavailable\r\nretry-after: 1",
    "server_busy",
    "the server holds too many requests that have not finished arriving; try again",
)
_FULL = Refusal(
    b"503 Service Unavailable\r\nretry-after: 1",
    "server_busy",
    "the server holds as many connections as it may; try again",
)
#: What uvicorn answered in ``text/plain`` to bytes httptools cannot parse as HTTP/1.1.
_NOT_HTTP = Refusal(
    b"400 Bad Request",
    "invalid_request",
    "the request is not well-formed HTTP/1.1 (its request line, a header, or its framing)",
)


class PendingBytes:
    """The bytes of requests begun and not wholly received, across one process's connections,
    and the bound past which a read that adds to them is refused."""

    __slots__ = ("held", "limit")

    def __init__(self, limit: int) -> None:
        self.held = 0
        self.limit = limit


#: The process's count (each ``--workers`` process has its own).
PENDING = PendingBytes(MAX_PENDING_REQUEST_BYTES)


def limit_pending_requests(limit: int) -> None:
    """Set the process's bound (``HUB_MAX_PENDING_REQUEST_BYTES``), before it serves."""
    PENDING.limit = limit


def _head_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed head, near enough: request line, ``name: value`` lines, blank line."""
    return len(url) + 16 + sum(len(name) + len(value) + 4 for name, value in headers) + 2


class _TimedFlow(FlowControl):
    """uvicorn's flow control, counting the time the server has not read the connection."""

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        on_resume: Callable[[], None],
    ) -> None:
        super().__init__(transport)
        self._loop = loop
        self._on_resume = on_resume
        self._paused_at = 0.0
        self._paused_s = 0.0  # pauses ended

    @property
    def paused_s(self) -> float:
        """The time reading has been paused, in total, the pause in course included."""
        ongoing = self._loop.time() - self._paused_at if self.read_paused else 0.0
        return self._paused_s + ongoing

    def pause_reading(self) -> None:
        if not self.read_paused:
            self._paused_at = self._loop.time()
        super().pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self._paused_s += self._loop.time() - self._paused_at
            super().resume_reading()
            self._on_resume()


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
    _in_body = False  # a request's head has arrived and its body has not, all of it
    _body_timer: asyncio.TimerHandle | None = None  # set while a body is incomplete
    _held = 0  # this connection's bytes in :attr:`pending`
    _body_due = 0.0  # (loop time) when the body is due, were the server never to stop reading
    _body_paused_s = 0.0  # the connection's time not read, in total, when the body's time began
    head_timeout_s = HEAD_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S
    pending = PENDING
    connection_bound: ConnectionBound = BOUND

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
        self.flow = self._timed_flow = _TimedFlow(transport, self.loop, self._reading_resumed)
        if len(self.connections) > self.connection_bound.limit:
            # refused before anything is read, and closed at once: a refused connection must
            # not be held (hub.core.connection_bound)
            self._refused = True
            self.connection_bound.refuse()
            transport.write(_FULL.answered()[1])
            transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._head_began = False
        self._may_pass = self._head_bytes + len(data) > MAX_REQUEST_HEAD_BYTES
        super().data_received(data)
        if self.transport.is_closing():
            self._release()
            return
        if self._in_head and not self._head_began:
            self._head_bytes += len(data)
            self._hold(len(data))
            if self._head_bytes > MAX_REQUEST_HEAD_BYTES:
                self._refuse_head()
                return
            if self._head_timer is None:
                loop = asyncio.get_running_loop()
                self._head_timer = loop.call_later(self.head_timeout_s, self._head_timed_out)
        elif self._in_body:
            self._hold(len(data))  # (with the head's bytes when it came in this read)
            if self._body_timer is None:
                self._start_body_timer()
        if self._held and self.pending.held > self.pending.limit:
            self._refuse(
                _BUSY,
                "http: requests not yet received hold more than the bound; refused with 503",
                pending_bytes=self.pending.held,
            )

    def _hold(self, size: int) -> None:
        self._held += size
        self.pending.held += size

    def _release(self) -> None:
        self.pending.held -= self._held
        self._held = 0

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self._refused and not self.transport.is_closing():
            why = "http: a request's head did not arrive in time; refused with 408"
            self.transport.write(_TIMED_OUT.logged(why))
            self.transport.close()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _start_body_timer(self) -> None:
        self._body_due = self.loop.time() + self.body_timeout_s
        self._body_paused_s = self._timed_flow.paused_s
        self._body_timer = self.loop.call_at(self._body_due, self._body_timed_out)

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if not self._in_body or self._refused or self.transport.is_closing():
            return
        if self.flow.read_paused:  # the server is not reading: :meth:`_reading_resumed` goes on
            return
        # the time the server did not read (an app yet to take what it was sent, a pipelined
        # request waiting its turn) is not the client's
        due = self._body_due + self._timed_flow.paused_s - self._body_paused_s
        if self.loop.time() < due:
            self._body_timer = self.loop.call_at(due, self._body_timed_out)
            return
        self._refuse(
            _BODY_TIMED_OUT, "http: a request's body did not arrive in time; refused with 408"
        )

    def _reading_resumed(self) -> None:
        if self._in_body and self._body_timer is None and not self._refused:
            self._body_timed_out()

    def _stop_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        self._stop_body_timer()
        self._release()
        super().connection_lost(exc)

    def _refuse_head(self) -> None:
        self._refuse(
            _HEAD_TOO_LARGE,
            "http: a request's head passed the bound; refused with 431",
            head_bytes=self._head_bytes,
        )

    def send_400_response(self, msg: str) -> None:
        """A request httptools cannot parse gets the hub's JSON 400 instead of uvicorn's
        ``text/plain`` one (uvicorn calls this when its parser fails), and is closed as there."""
        why = "http: a request is not well-formed HTTP/1.1; refused with 400"
        response = _NOT_HTTP.logged(why, reason=msg)
        self._refused = True
        self._release()
        self._stop_head_timer()
        self._stop_body_timer()
        self.transport.write(response)
        self.transport.close()

    def _refuse(self, refusal: Refusal, why: str, **extra: Any) -> None:
        """Answer ``refusal`` unless a response has begun, end the request its app may be
        reading (it receives a disconnect), and close: at once on our side, after
        :data:`LINGER_S` of discarding what the client still sends on its side."""
        response = refusal.logged(why, **extra)
        self._refused = True
        self._release()
        self._stop_head_timer()
        self._stop_body_timer()
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            self.transport.write(response)
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_S, self.transport.close)

    def on_headers_complete(self) -> None:
        self._in_head, self._in_body = False, True
        if self._head_timer is not None:  # (a head that came in one read started none)
            self._stop_head_timer()
        if self._may_pass and _head_size(self.url, self.headers) > MAX_REQUEST_HEAD_BYTES:
            # a head that arrived whole in one large read: answered by an app of its own, as
            # uvicorn answers 503 past its concurrency limit, and the connection closed after it.
            # Its URL is not parsed: httptools' ``parse_url`` refuses one of 64 KiB or more
            # (16-bit offsets), and uvicorn would answer that with its text/plain 400.
            self.url = b"/"
            app, self.app = self.app, _HEAD_TOO_LARGE.app
            try:
                super().on_headers_complete()
            finally:
                self.app = app
            return
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head, self._head_bytes, self._head_began = True, 0, True
        self._in_body = False
        self._stop_body_timer()
        self._release()
        super().on_message_complete()
