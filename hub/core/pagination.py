"""Cursor pagination over (created_at, id), DESIGN §13 "Lists".

The cursor is opaque to clients: URL-safe base64 of the last row's ``created_at`` and ``id``. A
cursor that does not decode is a 400. ``limit`` defaults to 50 and is at most 200.

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
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200

T = TypeVar("T")


@dataclass(frozen=True)
class PageParams:
    limit: int
    cursor: tuple[datetime, uuid.UUID] | None


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    next_cursor: str | None


def encode_cursor(created_at: datetime, row_id: uuid.UUID) -> str:
    raw = json.dumps([created_at.isoformat(), str(row_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        at, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        stamp = datetime.fromisoformat(at)
        if stamp.tzinfo is None:
            raise ValueError("naive")
        # a time that exists as written but not in UTC (year 0 or 10000) is not a cursor
        return stamp.astimezone(UTC), uuid.UUID(row_id)
    except (ValueError, TypeError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise BadRequest("the cursor is invalid") from None


async def page_params(  # async: a plain def dependency would run in the thread pool
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> PageParams:
    return PageParams(limit=limit, cursor=decode_cursor(cursor) if cursor else None)


PageParamsDep = Annotated[PageParams, Depends(page_params)]


Order = tuple[InstrumentedAttribute[datetime], InstrumentedAttribute[uuid.UUID]]


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
    the cursor of a newest-first page continues newest first."""
    rows = (await session.execute(_paginate(query, params, order, newest_first))).scalars().all()
    if len(rows) <= params.limit:
        return Page(items=rows, next_cursor=None)
    kept = rows[: params.limit]
    created_at, row_id = order
    last: Any = kept[-1]
    return Page(
        items=kept,
        next_cursor=encode_cursor(getattr(last, created_at.key), getattr(last, row_id.key)),
    )
