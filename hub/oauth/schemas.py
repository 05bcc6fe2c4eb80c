"""OAuth bodies (DESIGN §9, §12, §15). No read schema carries a token, a secret or a state."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from hub.core.paths import HANDLE_PATTERN
from hub.core.schemas import RequestModel
from hub.oauth.registration import CLIENT_ID_PATTERN

__all__ = [
    "AuthorizationCreate",
    "AuthorizationCreated",
    "AuthorizationRead",
    "ClientMetadataDocument",
    "PreRegisteredClient",
]

SCOPE_PATTERN = r"^[\x21\x23-\x5b\x5d-\x7e]{1,256}$"  # RFC 6749 §3.3 scope-token
AuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]


class PreRegisteredClient(RequestModel):
    """Client credentials an operator registered with the authorization server beforehand."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    client_id: str = Field(min_length=1, max_length=2048, pattern=CLIENT_ID_PATTERN)
    client_secret: SecretStr | None = Field(default=None, min_length=1, max_length=8192)
    token_endpoint_auth_method: AuthMethod | None = None

    @model_validator(mode="after")
    def _secret_for_method(self) -> PreRegisteredClient:
        method = self.token_endpoint_auth_method
        if method in ("client_secret_basic", "client_secret_post") and self.client_secret is None:
            raise ValueError("this token_endpoint_auth_method needs a client_secret")
        if method == "none" and self.client_secret is not None:
            raise ValueError("a public client (none) has no client_secret")
        return self


class AuthorizationCreate(RequestModel):
    """Exactly one of: ``server`` (a handle), ``url`` with ``credential_name``, or
    ``credential_id`` (re-authorise that credential: a step-up keeps and widens its scopes)."""

    server: str | None = Field(default=None, pattern=HANDLE_PATTERN)
    url: str | None = Field(default=None, min_length=1, max_length=2048)
    credential_name: str | None = Field(default=None, min_length=1, max_length=200)
    credential_id: uuid.UUID | None = None
    scopes: list[str] | None = Field(
        default=None, max_length=64, json_schema_extra={"items": {"pattern": SCOPE_PATTERN}}
    )
    client: PreRegisteredClient | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> AuthorizationCreate:
        named = [self.server is not None, self.url is not None, self.credential_id is not None]
        if sum(named) != 1:
            raise ValueError(
                "name exactly one of server, url (with credential_name), credential_id"
            )
        if (self.url is None) != (self.credential_name is None):
            raise ValueError("url and credential_name go together")
        for scope in self.scopes or ():
            if not re.fullmatch(SCOPE_PATTERN, scope):
                raise ValueError("a scope is not an RFC 6749 scope token")
        return self


class AuthorizationCreated(BaseModel):
    id: uuid.UUID
    authorization_url: str
    expires_at: datetime


class AuthorizationRead(BaseModel):
    id: uuid.UUID
    status: Literal["pending", "completed", "failed"]
    reason: str | None = None
    credential_id: uuid.UUID | None = None
    server: str | None = None
    expires_at: datetime
    created_at: datetime
    completed_at: datetime | None = None


class ClientMetadataDocument(BaseModel):
    """The hub's client ID metadata document (draft-ietf-oauth-client-id-metadata-document)."""

    client_id: str
    client_name: str
    client_uri: str
    redirect_uris: list[str]
    grant_types: list[str]
    response_types: list[str]
    token_endpoint_auth_method: str
    application_type: str
