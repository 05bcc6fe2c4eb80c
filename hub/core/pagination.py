"""Cursor pagination over (created_at, id), DESIGN §13 "Lists".

The cursor is opaque to clients: URL-safe base64 of the last row's ``created_at`` and ``id``. A
cursor that does not decode is a 400. ``limit`` defaults to 50 and is at most 200.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Query
from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from hub.core.errors import BadRequest

__all__ = ["Page", "PageParams", "PageParamsDep", "decode_cursor", "encode_cursor", "paginate"]

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
        return stamp, uuid.UUID(row_id)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise BadRequest("the cursor is invalid") from None


def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> PageParams:
    return PageParams(limit=limit, cursor=decode_cursor(cursor) if cursor else None)


PageParamsDep = Annotated[PageParams, Depends(page_params)]


def paginate(
    query: Select[T],
    params: PageParams,
    created_at: InstrumentedAttribute[datetime],
    row_id: InstrumentedAttribute[uuid.UUID],
) -> Select[T]:
    """Apply the cursor, the order and ``limit + 1`` (the extra row says whether a page follows)."""
    if params.cursor is not None:
        at, last_id = params.cursor
        query = query.where(or_(created_at > at, and_(created_at == at, row_id > last_id)))
    return query.order_by(created_at, row_id).limit(params.limit + 1)


def page_of(rows: Sequence[T], params: PageParams, key: Any) -> Page[T]:
    """Cut the extra row off and build the next cursor from the last row kept."""
    if len(rows) <= params.limit:
        return Page(items=rows, next_cursor=None)
    kept = rows[: params.limit]
    created, row_id = key(kept[-1])
    return Page(items=kept, next_cursor=encode_cursor(created, row_id))
