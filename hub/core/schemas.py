"""Building blocks for request bodies, so every route refuses the same bad input the same way.

- :class:`RequestModel` forbids unknown fields and refuses any string (value or key, at any depth)
  holding U+0000: PostgreSQL cannot store it in text or JSON, and no legitimate input needs it.
- :data:`UtcDatetime` is an aware datetime that must exist in UTC between the years 1 and 9999
  (``9999-12-31T23:59:59-23:59`` does not) and is normalised to UTC on the way in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, model_validator

__all__ = ["RequestModel", "UtcDatetime"]


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


class RequestModel(BaseModel):
    """Base of every request body."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_nul(cls, data: Any) -> Any:
        if _has_nul(data):
            raise ValueError("text must not contain NUL (U+0000) characters")
        return data


def _in_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("the time must fall between the years 1 and 9999 in UTC") from None


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_in_utc)]
