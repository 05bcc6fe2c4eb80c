"""Where a secret could hide: every text of an exception's whole cause/context chain, and every
log record at DEBUG, the HTTP libraries' own included."""

from __future__ import annotations

import logging
import traceback

import pytest

__all__ = ["chain", "debug_everything", "exposed_text"]

#: loggers the hub quiets in production (WARNING) and a leak test must hear at DEBUG
LIBRARY_LOGGERS = ("httpx2", "httpcore2", "hub")


def debug_everything(caplog: pytest.LogCaptureFixture) -> None:
    """Capture every record at DEBUG: the root logger and the ones the hub sets to WARNING
    (SECURITY §7.15: "with httpx/httpcore loggers enabled")."""
    caplog.set_level(logging.DEBUG)
    for name in LIBRARY_LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and everything reachable through ``__cause__`` and ``__context__``."""
    found: list[BaseException] = []
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or any(current is seen for seen in found):
            continue
        found.append(current)
        pending += [current.__cause__, current.__context__]
    return found


def exposed_text(exc: BaseException) -> str:
    """``str``, ``repr`` and args of every link, plus the formatted traceback."""
    parts: list[str] = []
    for link in chain(exc):
        parts += [str(link), repr(link), *(repr(arg) for arg in link.args)]
    parts += traceback.format_exception(exc)
    return "\n".join(parts)
