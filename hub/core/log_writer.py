"""Log lines written by a thread of their own, so a stalled reader never stalls the event loop.

A log line used to be written to stderr by the code that logged it, on the event loop. stderr is
a pipe to whatever collects the logs (the container runtime, a shell's ``| tee``, a test's
``subprocess.PIPE``); once its reader stops reading for a while, the pipe's 64 KiB fill up and the
next ``write`` blocks, and with it every request of the replica, ``/healthz`` included. Probed with
``hub serve`` and stderr left unread: 283 requests were served, then none.

:class:`QueuedLineHandler` formats a record where it is logged (so the request context and the
secrets live at that moment apply, as before) and hands the finished line to a bounded queue; one
:class:`LineWriter` thread per process writes what the queue holds. When the queue is full, a
line is dropped and counted, never waited for; the writer reports the count in a line of its own
once it can write again. At exit the writer is given :data:`DRAIN_S` to write what is queued.

Written here rather than with :class:`logging.handlers.QueueListener`: the listener stops by
putting a sentinel with ``put_nowait``, which fails on a full queue (the case this exists for),
and it has no way to count and report dropped lines.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
from collections import deque
from datetime import UTC, datetime
from typing import TextIO

__all__ = ["DRAIN_S", "GATHER_S", "QUEUED_LINES", "LineWriter", "QueuedLineHandler"]

#: lines held while the reader is slow; about 5 MB of typical lines
QUEUED_LINES = 10_000
#: how long exit waits for queued lines to be written
DRAIN_S = 2.0
#: how long the writer lets lines gather once one is queued: one wake-up and one ``write`` per
#: batch, not per line (a wake-up per line cost the bench's bare route 37,000 instructions, 5%)
GATHER_S = 0.02


class LineWriter:
    """One thread writing queued lines to ``stream``; :meth:`put` never blocks.

    The queue is a :class:`collections.deque` (its ``append`` and ``popleft`` are atomic) and an
    event set when a line arrives to an idle writer, so a put costs no lock and no system call
    while the writer is busy or already woken.

    A process forked from one with a writer gets a writer thread of its own, with an empty queue
    (the parent writes what it had queued): a fork copies no thread, and lines queued to none
    would never be written."""

    def __init__(self, stream: TextIO, *, maxsize: int = QUEUED_LINES) -> None:
        self._stream = stream
        self._maxsize = maxsize
        self._start()
        atexit.register(self.close)
        os.register_at_fork(after_in_child=self._start)

    def _start(self) -> None:
        self._closed = False
        self._lines: deque[str | None] = deque()
        self._wake = threading.Event()
        self._dropped = 0
        self._dropped_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hub-log-writer", daemon=True)
        self._thread.start()

    def put(self, line: str) -> None:
        if len(self._lines) >= self._maxsize:
            with self._dropped_lock:
                self._dropped += 1
            return
        self._append(line)

    def _append(self, item: str | None) -> None:
        self._lines.append(item)
        if not self._wake.is_set():
            self._wake.set()

    def flush(self, timeout: float = DRAIN_S) -> bool:
        """Wait until every line queued so far is written; False if ``timeout`` passed first.

        Once closed, nothing queued later will be written: whether everything was is answered
        at once. ``logging.shutdown`` flushes every handler at exit after :meth:`close` ran
        (``atexit`` calls the later registration first), and waited :data:`DRAIN_S` for a
        thread that had stopped: every ``hub`` process took 2 s longer to exit."""
        if self._closed:  # the thread may still be writing its last batch (a slow reader)
            return not self._lines and not self._thread.is_alive()
        marker = _Marker(threading.Event())
        self._append(marker)
        return marker.done.wait(timeout)

    def close(self) -> None:
        """Write what is queued (for at most :data:`DRAIN_S`), then stop the thread; a stalled
        reader leaves the daemon thread to end with the process."""
        atexit.unregister(self.close)
        self._closed = True
        if self._thread.is_alive():
            self._append(None)
            self._thread.join(DRAIN_S)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(GATHER_S)
            self._wake.clear()  # before the drain: a line appended after it wakes the next pass
            lines = self._lines
            batch = [lines.popleft() for _ in range(len(lines))]  # what is there now, no more
            if not self._write(batch):
                return

    def _write(self, batch: list[str | None]) -> bool:
        """Write ``batch`` (with the count of lines dropped before it); False at its end."""
        with self._dropped_lock:
            dropped, self._dropped = self._dropped, 0
        text = [_dropped_line(dropped)] if dropped else []
        markers = []
        running = True
        for line in batch:
            if line is None:
                running = False
                break
            if isinstance(line, _Marker):
                markers.append(line)
            else:
                text.append(line)
        try:
            if text:
                self._stream.write("\n".join(text) + "\n")
                self._stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stderr: nothing else could report it either
        for marker in markers:
            marker.done.set()
        return running


class _Marker(str):
    """Queued by :meth:`LineWriter.flush`: set once every line before it is written."""

    done: threading.Event

    def __new__(cls, done: threading.Event) -> _Marker:
        marker = super().__new__(cls, "")
        marker.done = done
        return marker


def _dropped_line(count: int) -> str:
    return json.dumps(
        {
            "time": datetime.now(UTC).isoformat(),
            "level": "warning",
            "logger": "hub.logging",
            "message": f"{count} log lines dropped: stderr was not read as fast as they came",
            "dropped_lines": count,
        }
    )


class QueuedLineHandler(logging.Handler):
    """Formats each record where it is logged and queues the line on a :class:`LineWriter`."""

    def __init__(self, writer: LineWriter) -> None:
        super().__init__()
        self.writer = writer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # a record that cannot be formatted must not break the caller
            self.handleError(record)
            return
        self.writer.put(line)

    def flush(self) -> None:
        self.writer.flush()
