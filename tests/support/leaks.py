"""Where a secret could hide in an exception: every text of its whole cause/context chain."""

from __future__ import annotations

import traceback

__all__ = ["chain", "exposed_text"]


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
