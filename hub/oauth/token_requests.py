"""Token endpoint requests: the code grant and the refresh grant (RFC 6749 §4.1.3, §6).

- Body: ``application/x-www-form-urlencoded`` built by authlib's ``prepare_token_request``.
  The code grant sends ``code``, ``redirect_uri`` (identical to the authorization request's),
  the PKCE ``code_verifier`` (RFC 7636 §4.5) and ``resource`` (RFC 8707 §2.2); the refresh grant
  ``refresh_token`` and ``resource`` (no ``scope``: the grant keeps what was authorised).
- Client authentication (RFC 6749 §2.3.1; the server's ``token_endpoint_auth_methods_supported``
  chose it at registration): ``client_secret_basic`` is the fetcher's ``Authorization: Basic``;
  ``client_secret_post`` and ``none`` put ``client_id`` (and the secret) in the body, by
  authlib's ``ClientAuth``. Every request goes through the pinned fetcher, pinned to the token
  endpoint's own origin, with the secrets registered for log redaction.
- Answer (§5.1): a JSON object with ``access_token`` (a valid header value), ``token_type``
  ``Bearer`` (case-insensitive, RFC 6750 §4; DPoP and others are refused), optional
  ``expires_in`` (seconds), ``refresh_token`` and ``scope``. An error answer (§5.2) yields only
  its ``error`` code when it is one of the registered codes — never ``error_description``.
  The body is parsed here, bounded by the fetcher (authlib's ``parse_response_token`` would
  raise on the status first and lose the code).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc6749.parameters import prepare_token_request

from hub.core.logging import redacting
from hub.egress import Fetcher, InvalidJson, is_header_safe_secret
from hub.mcp import split_scopes
from hub.oauth.http import post
from hub.oauth.registration import AuthMethod

__all__ = [
    "Client",
    "TokenError",
    "TokenResponse",
    "code_grant",
    "refresh_grant",
    "request_token",
]

#: RFC 6749 §5.2 and RFC 8707 §2: the codes the hub may report (in audit details); others read
#: as ``token_request_failed``.
KNOWN_ERRORS: Final = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "invalid_target",
    }
)
MAX_TOKEN = 8192


@dataclass(frozen=True)
class Client:
    client_id: str
    auth_method: AuthMethod
    client_secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class TokenResponse:
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_in: int | None = None
    scopes: tuple[str, ...] | None = None


class TokenError(Exception):
    """The token endpoint did not issue a token; ``error`` is a registered code or
    ``token_request_failed`` (never the server's text)."""

    def __init__(self, error: str) -> None:
        self.error = error if error in KNOWN_ERRORS else "token_request_failed"
        super().__init__(f"token request failed ({self.error})")


def code_grant(
    code: str, *, redirect_uri: str, verifier: str, resource: str
) -> list[tuple[str, str]]:
    return [
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
        ("resource", resource),
    ]


def refresh_grant(refresh_token: str, *, resource: str | None) -> list[tuple[str, str]]:
    params = [("refresh_token", refresh_token)]
    return [*params, ("resource", resource)] if resource else params


def _body(grant_type: str, params: Sequence[tuple[str, str]], client: Client) -> str:
    values = dict(params)
    redirect_uri = values.pop("redirect_uri", None)
    body: str = prepare_token_request(grant_type, redirect_uri=redirect_uri, **values)
    if client.auth_method != "client_secret_basic":
        auth = ClientAuth(client.client_id, client.client_secret or "", client.auth_method)
        _uri, _headers, body = auth.prepare("POST", "", {}, body)
    return body


def _expires_in(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int | float) and 0 <= value < 10**9:
        return int(value)
    return None


def _parse_success(answer: Any) -> TokenResponse:
    if not isinstance(answer, dict):
        raise TokenError("token_request_failed")
    token = answer.get("access_token")
    token_type = answer.get("token_type")
    if not isinstance(token, str) or not is_header_safe_secret(token) or len(token) > MAX_TOKEN:
        raise TokenError("token_request_failed")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise TokenError("token_request_failed")
    refresh = answer.get("refresh_token")
    if refresh is not None and (
        not isinstance(refresh, str) or not refresh or len(refresh) > MAX_TOKEN
    ):
        raise TokenError("token_request_failed")
    raw_scope = answer.get("scope")
    scopes = split_scopes(raw_scope) if isinstance(raw_scope, str) else None
    return TokenResponse(token, refresh, _expires_in(answer.get("expires_in")), scopes)


async def request_token(
    fetcher: Fetcher,
    token_endpoint: str,
    grant_type: str,
    params: Sequence[tuple[str, str]],
    client: Client,
    *,
    deadline_s: float,
    scope: str | None,
) -> TokenResponse:
    """One token request; :class:`TokenError` when no token was issued (egress failures
    propagate as :class:`~hub.egress.EgressError`)."""
    secrets = [v for name, v in params if name in ("code", "refresh_token", "code_verifier")]
    if client.client_secret:
        secrets.append(client.client_secret)
    basic = None
    if client.auth_method == "client_secret_basic" and client.client_secret:
        basic = (client.client_id, client.client_secret)
    with redacting(*secrets):
        response = await post(
            fetcher,
            token_endpoint,
            deadline_s=deadline_s,
            scope=scope,
            form=_body(grant_type, params, client),
            basic=basic,
        )
        try:
            answer = response.json()
        except InvalidJson:
            answer = None
        if response.status_code == 200:
            return _parse_success(answer)
    error = answer.get("error") if isinstance(answer, dict) else None
    raise TokenError(error if isinstance(error, str) else "token_request_failed")
