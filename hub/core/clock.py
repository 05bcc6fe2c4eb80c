"""The hub's clock. Everything that needs "now" asks here, so tests can move time (DESIGN §13)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["now", "set_clock"]

_source: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return _source()


def set_clock(source: Callable[[], datetime] | None) -> None:
    """Replace the time source (tests only); ``None`` restores the system clock."""
    global _source
    _source = source if source is not None else (lambda: datetime.now(UTC))
