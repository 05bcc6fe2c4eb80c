"""Column types that behave the same on SQLite and PostgreSQL.

SQLite has no timezone-aware timestamp: :class:`UTCDateTime` stores UTC and always hands back an
aware ``datetime`` in UTC, and refuses naive values on the way in so a local time can never be
stored by mistake. :data:`JSONType` is JSONB on PostgreSQL and JSON text on SQLite.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = ["JSONType", "UTCDateTime"]


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; pass an aware UTC datetime")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


JSONType: Any = JSON().with_variant(JSONB(), "postgresql")
