"""Server bodies (DESIGN §12)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from hub.core.paths import HANDLE_PATTERN
from hub.core.schemas import RequestModel

__all__ = ["HANDLE_PATTERN", "ServerCreate", "ServerRead", "ServerUpdate"]


class ServerCreate(RequestModel):
    handle: str = Field(
        pattern=HANDLE_PATTERN,
        description="1-63 of a-z, 0-9, '_' and '-', starting with a letter or digit; no dots",
    )
    url: str = Field(min_length=1, max_length=2048)
    credential_id: uuid.UUID | None = None


class ServerUpdate(RequestModel):
    url: str | None = Field(default=None, min_length=1, max_length=2048)
    credential_id: uuid.UUID | None = None


class ServerRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    handle: str
    url: str
    credential_id: uuid.UUID | None
    era: str | None
    protocol_version: str | None
    created_at: datetime
    updated_at: datetime
