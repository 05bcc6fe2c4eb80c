"""A grant's conditions: the time window it applies in (DESIGN §8).

``{"time_window": {"start": "09:00", "end": "17:00", "tz": "Europe/Paris", "days": ["mon", …]}}``;
a window may cross midnight; ``tz`` defaults to UTC. Unknown keys are errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hub.grants.patterns import PolicyError

__all__ = ["TimeWindow", "parse_conditions"]

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class TimeWindow:
    """``{"start": "09:00", "end": "17:00", "tz": "Europe/Paris", "days": ["mon", …]}``."""

    start: time
    end: time
    tz: ZoneInfo
    days: frozenset[int] | None

    def holds(self, at: datetime) -> bool:
        local = at.astimezone(self.tz)
        if self.days is not None and local.weekday() not in self.days:
            return False
        now = local.time().replace(tzinfo=None)
        if self.start <= self.end:
            return self.start <= now < self.end
        return now >= self.start or now < self.end  # a window across midnight


def _parse_hhmm(value: object, name: str) -> time:
    if not isinstance(value, str) or not re.fullmatch(r"\d{2}:\d{2}", value):
        raise PolicyError(f"time_window.{name} must be HH:MM")
    hours, minutes = int(value[:2]), int(value[3:])
    if hours > 23 or minutes > 59:
        raise PolicyError(f"time_window.{name} must be HH:MM")
    return time(hours, minutes)


def _parse_time_window(raw: object) -> TimeWindow:
    if not isinstance(raw, dict):
        raise PolicyError("time_window must be an object")
    unknown = set(raw) - {"start", "end", "tz", "days"}
    if unknown:
        raise PolicyError("time_window has unknown keys")
    start = _parse_hhmm(raw.get("start"), "start")
    end = _parse_hhmm(raw.get("end"), "end")
    if start == end:
        raise PolicyError("time_window.start and end must differ")
    tz_name = raw.get("tz", "UTC")
    try:
        if not isinstance(tz_name, str):
            raise ZoneInfoNotFoundError
        tz = ZoneInfo(tz_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise PolicyError("time_window.tz is not a known time zone") from None
    days_raw = raw.get("days")
    days: frozenset[int] | None = None
    if days_raw is not None:
        if not isinstance(days_raw, list) or not days_raw:
            raise PolicyError("time_window.days must be a non-empty list")
        if not all(isinstance(d, str) and d in _DAYS for d in days_raw):
            raise PolicyError("time_window.days holds an unknown day")
        days = frozenset(_DAYS.index(d) for d in days_raw)
    return TimeWindow(start=start, end=end, tz=tz, days=days)


def parse_conditions(raw: Mapping[str, Any] | None) -> TimeWindow | None:
    """Validate a grant's conditions; only ``time_window`` exists (unknown keys are errors)."""
    if not raw:
        return None
    unknown = set(raw) - {"time_window"}
    if unknown:
        raise PolicyError("unknown condition key")
    return _parse_time_window(raw["time_window"])
