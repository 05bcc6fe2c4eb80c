"""Building blocks for request bodies, so every route refuses the same bad input the same way.

- :class:`RequestModel` forbids unknown fields and refuses any string (value or key, at any depth)
  holding U+0000: PostgreSQL cannot store it in text or JSON, and no legitimate input needs it.
- :data:`UtcDatetime` is an aware datetime that must exist in UTC between the years 1 and 9999
  (``9999-12-31T23:59:59-23:59`` does not) and is normalised to UTC on the way in.
- :class:`Envelope` and :class:`ListEnvelope` are the success bodies of DESIGN §4
  (``{"data": …}`` and ``{"data": […], "next_cursor": …}``); endpoints declare them as their
  response models, so OpenAPI documents every 2xx body with its ``*Read`` schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, model_validator

from hub.core.pagination import Page

__all__ = ["Envelope", "ListEnvelope", "RequestModel", "UtcDatetime"]

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)


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


class Envelope(BaseModel, Generic[T]):
    """``{"data": …}``: every single-object success body."""

    data: T


class ListEnvelope(BaseModel, Generic[R]):
    """``{"data": […], "next_cursor": …}``: every list body (``next_cursor`` null on the last)."""

    data: list[R]
    next_cursor: str | None = None

    @classmethod
    def of(
        cls, page: Page[Any], read: type[R], convert: Callable[[Any], R] | None = None
    ) -> ListEnvelope[R]:
        """A page's rows as ``read`` models (``model_validate`` unless ``convert`` is given)."""
        make = convert or read.model_validate
        return ListEnvelope[read](  # type: ignore[valid-type]
            data=[make(row) for row in page.items], next_cursor=page.next_cursor
        )

    @classmethod
    def of_items(cls, items: Iterable[R], next_cursor: str | None = None) -> ListEnvelope[R]:
        return cls(data=list(items), next_cursor=next_cursor)
