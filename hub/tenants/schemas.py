"""Tenant request and response bodies (DESIGN §12, §14).

A slug names its tenant in every tenant path (``/tenants/acme/…``), so it can never parse as a
UUID (creating or renaming to one is 400): ``{t}`` is a slug or an id, never both.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hub.core.paths import SLUG_PATTERN, slug_problem
from hub.core.schemas import RequestModel

__all__ = ["RESERVED_SLUGS", "SLUG_PATTERN", "TenantCreate", "TenantRead", "TenantUpdate"]

_SLUG_DESCRIPTION = "lowercase letters, digits and '-'; never UUID-shaped"


#: Slugs that already name something else where tenants are listed by slug: ``platform`` labels
#: the platform's audit chain next to the tenants' (``hub audit verify --local``). No path word
#: collides (no route has a literal where ``{t}`` is). Only creating or renaming is refused.
RESERVED_SLUGS = frozenset({"platform"})


def _check_slug(value: str | None) -> str | None:
    if value is not None:
        problem = slug_problem(value)
        if problem is None and value in RESERVED_SLUGS:
            problem = f"slug {value!r} is reserved (it names the platform's own audit chain)"
        if problem is not None:
            raise ValueError(problem)
    return value


class TenantCreate(RequestModel):
    slug: str = Field(pattern=SLUG_PATTERN, description=_SLUG_DESCRIPTION)
    name: str = Field(min_length=1, max_length=200)

    _slug = field_validator("slug")(_check_slug)


class TenantUpdate(RequestModel):
    slug: str | None = Field(default=None, pattern=SLUG_PATTERN, description=_SLUG_DESCRIPTION)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    status: Literal["active", "disabled"] | None = None

    _slug = field_validator("slug")(_check_slug)


class TenantRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    slug: str
    name: str
    status: str
    created_at: datetime
