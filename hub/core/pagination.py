"""Cursor pagination over (created_at, id), DESIGN §13 "Lists".

The cursor is opaque to clients: URL-safe base64 of the last row's ``created_at`` and ``id``, and
of the direction its page was read in (``oldest`` or ``newest`` first). A cursor that does not
decode is a 400, and so is one sent with a list order other than its own: it would repeat rows
already seen (a cursor of the two-element form made before the direction was added continues
whichever order is asked). ``limit`` defaults to 50 and is at most 200.

:func:`fetch_page` names the order once — ``order=(Model.created_at, Model.id)`` — and uses the
same two columns for the cursor filter, the ``ORDER BY`` and the next cursor, so they cannot
disagree.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Query
from sqlalchemy import Select, and_, or_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from hub.core.errors import BadRequest

__all__ = [
    "Order",
    "Page",
    "PageParams",
    "PageParamsDep",
    "decode_cursor",
    "encode_cursor",
    "fetch_page",
    "newest_first_of",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

T = TypeVar("T")


@dataclass(frozen=True)
class PageParams:
    limit: int
    cursor: tuple[datetime, uuid.UUID] | None
    #: whether the cursor's page was newest first (None: no cursor, or one that does not say)
    cursor_newest: bool | None = None


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    next_cursor: str | None


_DIRECTIONS = {"oldest": False, "newest": True}


def encode_cursor(created_at: datetime, row_id: uuid.UUID, *, newest_first: bool = False) -> str:
    direction = "newest" if newest_first else "oldest"
    raw = json.dumps([created_at.isoformat(), str(row_id), direction]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str) -> tuple[datetime, uuid.UUID, bool | None]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        at, row_id, *rest = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if len(rest) > 1 or (rest and rest[0] not in _DIRECTIONS):
            raise ValueError("direction")
        stamp = datetime.fromisoformat(at)
        if stamp.tzinfo is None:
            raise ValueError("naive")
        # a time that exists as written but not in UTC (year 0 or 10000) is not a cursor
        newest = _DIRECTIONS[rest[0]] if rest else None
        return stamp.astimezone(UTC), uuid.UUID(row_id), newest
    except (ValueError, TypeError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise BadRequest("the cursor is invalid") from None


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    at, row_id, _newest = _decode(cursor)
    return at, row_id


async def page_params(  # async: a plain def dependency would run in the thread pool
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> PageParams:
    if not cursor:
        return PageParams(limit=limit, cursor=None)
    at, row_id, newest = _decode(cursor)
    return PageParams(limit=limit, cursor=(at, row_id), cursor_newest=newest)


PageParamsDep = Annotated[PageParams, Depends(page_params)]


Order = tuple[InstrumentedAttribute[datetime], InstrumentedAttribute[uuid.UUID]]


def newest_first_of(asked: bool | None, params: PageParams) -> bool:
    """A list's direction: the one ``asked`` for, else its cursor's (a cursor continues in its
    own direction when no order is sent), else oldest first."""
    if asked is not None:
        return asked
    return bool(params.cursor_newest)


def _check_direction(params: PageParams, newest_first: bool) -> None:
    if params.cursor_newest is not None and params.cursor_newest != newest_first:
        made = "newest" if params.cursor_newest else "oldest"
        raise BadRequest(
            f"the cursor continues a list read {made} first: send it with that order "
            "(or with none), or start again without a cursor"
        )


def _paginate(query: Select[T], params: PageParams, order: Order, newest_first: bool) -> Select[T]:
    """Apply the cursor, the order and ``limit + 1`` (the extra row says whether a page follows);
    ``newest_first`` walks the same keys backwards (the same index, scanned in reverse)."""
    created_at, row_id = order
    if params.cursor is not None:
        at, last_id = params.cursor
        if newest_first:
            query = query.where(or_(created_at < at, and_(created_at == at, row_id < last_id)))
        else:
            query = query.where(or_(created_at > at, and_(created_at == at, row_id > last_id)))
    keys = (created_at.desc(), row_id.desc()) if newest_first else (created_at, row_id)
    return query.order_by(*keys).limit(params.limit + 1)


async def fetch_page(
    session: AsyncSession,
    query: Select[T],
    params: PageParams,
    *,
    order: Order,
    newest_first: bool = False,
) -> Page[T]:
    """One page of ``query`` ordered by ``order`` (a time column, then the id), with its cursor;
    the cursor of a newest-first page continues newest first, and a cursor sent with the other
    order is a 400."""
    _check_direction(params, newest_first)
    rows = (await session.execute(_paginate(query, params, order, newest_first))).scalars().all()
    if len(rows) <= params.limit:
        return Page(items=rows, next_cursor=None)
    kept = rows[: params.limit]
    created_at, row_id = order
    last: Any = kept[-1]
    return Page(
        items=kept,
        next_cursor=encode_cursor(
            getattr(last, created_at.key), getattr(last, row_id.key), newest_first=newest_first
        ),
    )
