"""Building blocks for request bodies, so every route refuses the same bad input the same way.

- :class:`RequestModel` forbids unknown fields and refuses any string (value or key, at any depth)
  holding U+0000 (PostgreSQL cannot store it in text or JSON) or a lone surrogate (neither
  backend can encode it), numbers that are not finite, and bodies nested more than
  :data:`MAX_BODY_DEPTH` levels.
- :data:`UtcDatetime` is an aware datetime that must exist in UTC between the years 1 and 9999
  (``9999-12-31T23:59:59-23:59`` does not) and is normalised to UTC on the way in. It is an ISO
  8601 text, never a number: pydantic would read ``1893456000`` as seconds since 1970 and
  ``99999999999`` as milliseconds, a meaning the schema (``format: date-time``) does not give.
- :class:`Envelope` and :class:`ListEnvelope` are the success bodies of DESIGN §4
  (``{"data": …}`` and ``{"data": […], "next_cursor": …}``); endpoints declare them as their
  response models, so OpenAPI documents every 2xx body with its ``*Read`` schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    model_validator,
)

from hub.core.pagination import Page

__all__ = [
    "MAX_BODY_DEPTH",
    "Envelope",
    "ListEnvelope",
    "RequestModel",
    "UtcDatetime",
    "body_problem",
]

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)


#: How deeply a request body may nest objects and arrays. No hub body needs more than a few
#: levels (credential ``metadata`` and grant ``conditions`` are the deepest); a bound keeps a
#: hostile body from exhausting recursion anywhere it is walked.
MAX_BODY_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "text must not contain NUL (U+0000) characters"
    if _SURROGATE.search(text):
        return "text must not contain lone surrogates (U+D800 to U+DFFF)"
    return None


def body_problem(value: Any) -> str | None:
    """Why a parsed body cannot be accepted, or None: NUL characters (PostgreSQL cannot store
    them), lone surrogates (not encodable as UTF-8 on either backend), numbers that are not
    finite (``json.loads`` reads ``NaN``, ``Infinity`` and ``1e400``; PostgreSQL's ``jsonb``
    refuses them and SQLite's JSON reads them back as ``null``), or nesting deeper than
    :data:`MAX_BODY_DEPTH`. Walks iteratively, so no depth can raise ``RecursionError``."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                return problem
        elif isinstance(item, float) and not math.isfinite(item):
            return "numbers must be finite (NaN, Infinity, beyond a double's range: not JSON)"
        elif isinstance(item, dict | list | tuple):
            if depth >= MAX_BODY_DEPTH:
                return f"the body nests objects and arrays more than {MAX_BODY_DEPTH} levels deep"
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


class RequestModel(BaseModel):
    """Base of every request body."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_bad_text(cls, data: Any) -> Any:
        problem = body_problem(data)
        if problem is not None:
            raise ValueError(problem)
        return data


def _in_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("the time must fall between the years 1 and 9999 in UTC") from None


#: a number, as text too (``"1893456000"``, ``"1.8e9"``): what pydantic reads as a Unix time
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def _not_a_number(value: Any) -> Any:
    if isinstance(value, int | float) or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError(
            "a time is an ISO 8601 date-time with its offset (2030-01-01T00:00:00Z), not a number"
        )
    return value


UtcDatetime = Annotated[AwareDatetime, BeforeValidator(_not_a_number), AfterValidator(_in_utc)]


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
