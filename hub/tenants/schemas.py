"""Tenant request and response bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hub.core.schemas import RequestModel

__all__ = ["TenantCreate", "TenantRead", "TenantUpdate"]

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"


class TenantCreate(RequestModel):
    slug: str = Field(pattern=SLUG_PATTERN, description="lowercase letters, digits and '-'")
    name: str = Field(min_length=1, max_length=200)


class TenantUpdate(RequestModel):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    status: Literal["active", "disabled"] | None = None


class TenantRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    slug: str
    name: str
    status: str
    created_at: datetime
