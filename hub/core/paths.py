"""Ids in paths: a malformed one reads as 404, like an absent one (DESIGN §13)."""

from __future__ import annotations

import uuid

from hub.core.errors import NotFound

__all__ = ["parse_id"]


def parse_id(value: str) -> uuid.UUID:
    """A path id; a malformed one reads as 404, like an absent one (DESIGN §13)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        raise NotFound() from None
