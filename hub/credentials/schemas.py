"""Credential bodies (DESIGN §12). The secret is write-only: no Read schema has it."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StrictInt,
    field_validator,
    model_validator,
)

from hub.core.names import Name
from hub.core.schemas import RequestModel, UtcDatetime

__all__ = [
    "CredentialCreate",
    "CredentialRead",
    "CredentialType",
    "CredentialUpdate",
    "OAuthDetails",
]

#: The closed set of credential types (``hub.credentials.constants.CREDENTIAL_TYPES``).
CredentialType = Literal["api_key", "oauth_token", "secret"]
MAX_SECRET = 8192
MAX_METADATA_BYTES = 16_384


def _check_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return value
    import json

    if len(json.dumps(value)) > MAX_METADATA_BYTES:
        raise ValueError("metadata is too large")
    mcp = value.get("mcp")
    if mcp is not None:
        if not isinstance(mcp, dict):
            raise ValueError("metadata.mcp must be an object")
        unknown = set(mcp) - {"auth"}
        if unknown:
            raise ValueError("metadata.mcp has unknown keys")
        if mcp.get("auth") not in (None, "none", "token", "oauth"):
            raise ValueError("metadata.mcp.auth must be none, token or oauth")
    return value


class CredentialCreate(RequestModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    name: Name
    type: CredentialType = Field(
        description="api_key or oauth_token: sent upstream as a bearer; secret: never sent"
    )
    secret: SecretStr | None = Field(default=None, max_length=MAX_SECRET)
    api_base_url: str | None = Field(default=None, max_length=2048)
    expires_at: UtcDatetime | None = None
    metadata: dict[str, Any] | None = None
    status: Literal["active", "error"] | None = None

    _metadata = field_validator("metadata")(_check_metadata)


class CredentialUpdate(RequestModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    name: Name | None = None
    secret: SecretStr | None = Field(default=None, max_length=MAX_SECRET)
    api_base_url: str | None = Field(default=None, max_length=2048)
    status: Literal["active", "error", "revoked"] | None = None
    expires_at: UtcDatetime | None = None
    metadata: dict[str, Any] | None = None
    version: StrictInt | None = Field(default=None, ge=1)

    _metadata = field_validator("metadata")(_check_metadata)


class OAuthDetails(BaseModel):
    """What the hub's OAuth flow recorded (hub-written; no PATCH changes it)."""

    issuer: str
    token_endpoint: str
    client_id: str
    auth_method: str
    resource: str | None
    scopes: list[str]
    server_url: str | None
    has_refresh_token: bool


class CredentialRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str
    type: str = Field(description="api_key, oauth_token or secret (older rows may differ)")
    api_base_url: str | None
    status: str
    expires_at: datetime | None
    metadata: dict[str, Any] = Field(validation_alias="meta")
    version: int
    has_secret: bool
    created_at: datetime
    updated_at: datetime
    oauth: OAuthDetails | None = None

    @model_validator(mode="before")
    @classmethod
    def _oauth_of_row(cls, data: Any) -> Any:
        if isinstance(data, dict) or getattr(data, "oauth_token_endpoint", None) is None:
            return data
        values = {name: getattr(data, name) for name in _READ_FIELDS}
        values["meta"] = data.meta
        values["oauth"] = OAuthDetails(
            issuer=data.oauth_issuer or "",
            token_endpoint=data.oauth_token_endpoint,
            client_id=data.oauth_client_id or "",
            auth_method=data.oauth_auth_method or "none",
            resource=data.oauth_resource,
            scopes=(data.oauth_scopes or "").split(),
            server_url=data.oauth_server_url,
            has_refresh_token=data.refresh_token_ciphertext is not None,
        )
        return values


_READ_FIELDS = (
    "id",
    "name",
    "type",
    "api_base_url",
    "status",
    "expires_at",
    "version",
    "has_secret",
    "created_at",
    "updated_at",
)
