"""The authorization request and the checks of its response.

- **Request** (RFC 6749 §4.1.1; built by authlib's ``prepare_grant_uri``, which keeps any query
  the endpoint already has, §3.1): ``response_type=code``, ``client_id``, ``redirect_uri``,
  ``scope`` (omitted when empty), ``state``, the PKCE ``code_challenge`` with
  ``code_challenge_method=S256`` (RFC 7636 §4.3), and ``resource`` (RFC 8707 §2.1: the resource
  exactly as the protected resource metadata publishes it — never re-serialised, so no ``/``
  is appended to a pathless identifier).
- **Response issuer** (RFC 9207 §2.4, MCP 2026-07-28): the ``iss`` of the redirect is compared
  with the issuer recorded for the flow by plain string equality — no case folding, no
  trailing-slash or port normalisation. A missing ``iss`` is refused when the authorization
  server advertised ``authorization_response_iss_parameter_supported``; a present one is
  compared whether advertised or not. The check runs before ``error`` is even looked at, so a
  mix-up attacker's error response is refused like its success.
"""

from __future__ import annotations

from collections.abc import Sequence

from authlib.oauth2.rfc6749.parameters import prepare_grant_uri

from hub.oauth.exceptions import failure
from hub.oauth.pkce import S256
from hub.oauth.scopes import join_scopes

__all__ = ["authorization_url", "check_response_issuer"]


def authorization_url(
    endpoint: str,
    *,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    state: str,
    code_challenge: str,
    resource: str,
) -> str:
    url: str = prepare_grant_uri(
        endpoint,
        client_id,
        "code",
        redirect_uri=redirect_uri,
        scope=join_scopes(scopes),
        state=state,
        code_challenge=code_challenge,
        code_challenge_method=S256,
        resource=resource,
    )
    return url


def check_response_issuer(recorded: str, iss: str | None, *, required: bool) -> None:
    """RFC 9207 §2.4; raises ``iss_mismatch``."""
    if iss is None:
        if required:
            raise failure("iss_mismatch")
        return
    if iss != recorded:
        raise failure("iss_mismatch")
