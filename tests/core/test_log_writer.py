"""Log lines are written by a thread of their own: a reader that stops reading stderr costs the
code that logs nothing but the lines dropped past the queue, and those are counted."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import threading
import time
from collections.abc import Iterator

import pytest

from hub.core import log_writer
from hub.core.log_writer import LineWriter, QueuedLineHandler
from hub.core.logging import JsonFormatter, RedactingFilter, redacting

LINE = "x" * 1_000  # 64 of them fill a pipe


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):  # a test closed it itself
            os.close(fd)


def _put_slowly(writer: LineWriter, count: int) -> None:
    """``count`` lines, letting the writer thread run between them, as a server logging would;
    on a thread of its own, so that a put that blocks fails the test instead of hanging it."""

    def put() -> None:
        for number in range(count):
            writer.put(f"{number} {LINE}")
            if number % 10 == 9:
                time.sleep(0.001)

    putter = threading.Thread(target=put, daemon=True)
    putter.start()
    putter.join(1.5)
    assert not putter.is_alive(), "a put blocked on the stalled reader"


def _read_all(fd: int) -> list[str]:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks).decode().splitlines()


def test_a_stalled_reader_never_blocks_the_logger_and_drops_are_counted(
    pipe: tuple[int, int],
) -> None:
    read, write = pipe
    writer = LineWriter(os.fdopen(write, "w", closefd=False), maxsize=100)
    _put_slowly(writer, 500)

    reader = threading.Thread(target=lambda: lines.extend(_read_all(read)))
    lines: list[str] = []
    reader.start()
    assert writer.flush(timeout=10)
    writer.close()
    os.close(write)
    reader.join(10)

    written = [line for line in lines if not line.startswith("{")]
    reports = [json.loads(line) for line in lines if line.startswith("{")]
    assert reports
    assert {report["level"] for report in reports} == {"warning"}
    dropped = sum(report["dropped_lines"] for report in reports)
    assert dropped >= 500 - 2 * 100  # the queue, and one batch of it in the blocked write
    assert len(written) + dropped == 500
    assert [int(line.split()[0]) for line in written] == sorted(
        int(line.split()[0]) for line in written
    )  # in order
    assert written[0].startswith("0 ")  # the first lines went first


def test_flush_gives_up_on_a_stalled_reader(pipe: tuple[int, int]) -> None:
    read, write = pipe
    writer = LineWriter(os.fdopen(write, "w", closefd=False))
    _put_slowly(writer, 200)  # 200 kB: the writer blocks on a pipe that holds 64 KiB
    started = time.monotonic()
    assert not writer.flush(timeout=0.3)
    assert time.monotonic() - started < 0.3 + 1.5
    # read what it holds, so that its thread ends before the pipe's descriptors are reused
    reader = threading.Thread(target=_read_all, args=(read,), daemon=True)
    reader.start()
    writer.close()
    os.close(write)
    reader.join(5)  # at the end of the pipe, before its descriptor's number can be reused
    assert not reader.is_alive()


def test_a_line_is_formatted_and_redacted_when_logged_not_when_written(
    pipe: tuple[int, int],
) -> None:
    """The writer may write a line after its secret stopped being live: redaction and the
    request context must already be applied to the queued line."""
    read, write = pipe
    writer = LineWriter(os.fdopen(write, "w", closefd=False))
    handler = QueuedLineHandler(writer)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("hub.test.log_writer")
    logger.addHandler(handler)
    logger.propagate = False
    canary = "CANARY-queued-line-5521"
    try:
        with redacting(canary):
            try:
                raise ValueError(f"upstream said {canary}")
            except ValueError:
                logger.exception("call failed with %s", canary)
        assert writer.flush(timeout=5)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        writer.close()
    os.close(write)
    (line,) = _read_all(read)
    assert canary not in line
    record = json.loads(line)
    assert record["message"] == "call failed with [redacted]"
    assert "upstream said [redacted]" in record["exception"]


def test_a_forked_process_writes_its_own_lines(pipe: tuple[int, int]) -> None:
    """A fork copies no thread: without a writer of its own, the child's lines would wait in a
    queue nothing reads (and the parent's queued lines must not be written twice)."""
    read, write = pipe
    writer = LineWriter(os.fdopen(write, "w", closefd=False))
    writer.put("parent")
    assert writer.flush(timeout=5)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit code is the assertion
        writer.put("child")
        os._exit(0 if writer.flush(timeout=5) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    writer.close()
    os.close(write)
    assert _read_all(read) == ["parent", "child"]


def test_a_flush_after_close_answers_at_once(pipe: tuple[int, int]) -> None:
    """At exit ``logging.shutdown`` flushes the handler after the writer closed (``atexit`` runs
    the later registration first): the flush waited its whole timeout for a thread that had
    stopped, and every ``hub`` process took 2 s longer to exit."""
    read, write = pipe
    writer = LineWriter(os.fdopen(write, "w", closefd=False))
    handler = QueuedLineHandler(writer)
    writer.put("before close")
    writer.close()
    flushed: list[bool] = []
    flusher = threading.Thread(target=lambda: flushed.append(writer.flush(timeout=60)))
    flusher.start()
    handler.flush()  # what logging.shutdown calls
    flusher.join(1.5)
    assert not flusher.is_alive(), "a flush after close waited for a writer that had stopped"
    assert flushed == [True]  # the line queued before close was written
    os.close(write)
    assert _read_all(read) == ["before close"]


def test_a_flush_after_close_is_false_while_the_last_lines_are_still_being_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``close`` gave up on a slow reader: the queue is empty (its last batch was taken), but
    the batch is not written yet."""
    monkeypatch.setattr(log_writer, "DRAIN_S", 0.2)
    released = threading.Event()
    written: list[str] = []

    class Slow(io.StringIO):
        def write(self, text: str) -> int:
            released.wait(10)
            written.append(text)
            return len(text)

    writer = LineWriter(Slow())
    writer.put("a line")
    writer.close()  # the line and the end were taken together; the write waits
    assert not writer.flush()
    released.set()
    writer._thread.join(5)
    assert written == ["a line\n"]
    assert writer.flush()
