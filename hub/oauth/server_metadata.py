"""Authorization server metadata: RFC 8414 and OpenID Connect Discovery 1.0, in the MCP order.

Where to look (MCP 2025-11-25/2026-07-28 "Authorization Server Metadata Discovery"):

- issuer with a path (``https://auth.ex.com/tenant1``):
  1. ``https://auth.ex.com/.well-known/oauth-authorization-server/tenant1`` (RFC 8414 §3.1),
  2. ``https://auth.ex.com/.well-known/openid-configuration/tenant1`` (path insertion),
  3. ``https://auth.ex.com/tenant1/.well-known/openid-configuration`` (OIDC Discovery §4);
- issuer without a path: ``/.well-known/oauth-authorization-server``, then
  ``/.well-known/openid-configuration``.

The first URL answering a JSON object is **the** document: if its ``issuer`` is not identical to
the issuer the URL was built from (RFC 8414 §3.3, OIDC Discovery §4.3; plain string equality,
because authlib's ``validate_issuer`` only checks the scheme), the flow stops with
``issuer_mismatch`` — it does not go on to another location an attacker may also control.

Then: ``authorization_endpoint`` and ``token_endpoint`` must be URLs the egress rules accept;
``code_challenge_methods_supported`` must list ``S256`` (MCP: refuse when absent; RFC 8414 §2
says absence means no PKCE); list-valued fields are checked with authlib's RFC 8414 model
(``response_types_supported`` must include ``code`` when present). Kept for the flow:
registration endpoint, ``scopes_supported``, token endpoint auth methods (default
``client_secret_basic``, §2), ``client_id_metadata_document_supported`` and RFC 9207's
``authorization_response_iss_parameter_supported``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

from hub.egress import EgressConfig, Fetcher
from hub.mcp import split_scopes
from hub.oauth.exceptions import failure
from hub.oauth.http import FlowClock, checked_url, get_document
from hub.oauth.pkce import S256

__all__ = ["ServerMetadata", "discover_server", "metadata_urls"]

OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class ServerMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    scopes_supported: tuple[str, ...] | None
    auth_methods_supported: tuple[str, ...]
    metadata_document_supported: bool
    iss_parameter_supported: bool


def metadata_urls(issuer: str) -> list[str]:
    """The locations to try for ``issuer``, in order (see the module docstring)."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{origin}{OAUTH_WELL_KNOWN}", f"{origin}{OIDC_WELL_KNOWN}"]
    return [
        f"{origin}{OAUTH_WELL_KNOWN}{path}",
        f"{origin}{OIDC_WELL_KNOWN}{path}",
        f"{origin}{path}{OIDC_WELL_KNOWN}",
    ]


def _strings(document: dict[str, Any], key: str) -> tuple[str, ...] | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise failure("as_metadata_invalid")
    return tuple(value)


def _flag(document: dict[str, Any], key: str) -> bool:
    value = document.get(key, False)
    if not isinstance(value, bool):
        raise failure("as_metadata_invalid")
    return value


def _shape(document: dict[str, Any]) -> None:
    """authlib's RFC 8414 §2 checks of the list-valued fields (URLs are checked by ours)."""
    model = AuthorizationServerMetadata(document)
    try:
        model.validate_scopes_supported()
        model.validate_response_modes_supported()
        model.validate_grant_types_supported()
        model.validate_token_endpoint_auth_methods_supported()
        model.validate_code_challenge_methods_supported()
    except ValueError:
        raise failure("as_metadata_invalid") from None


def _parse(document: dict[str, Any], issuer: str, egress: EgressConfig) -> ServerMetadata:
    if document.get("issuer") != issuer:
        raise failure("issuer_mismatch")
    _shape(document)
    response_types = _strings(document, "response_types_supported")
    if response_types is not None and "code" not in response_types:
        raise failure("as_metadata_invalid")
    methods = _strings(document, "code_challenge_methods_supported")
    if methods is None or S256 not in methods:
        raise failure("pkce_unsupported")
    registration = document.get("registration_endpoint")
    scopes = _strings(document, "scopes_supported")
    if scopes is not None and split_scopes(" ".join(scopes)) is None:
        raise failure("as_metadata_invalid")
    return ServerMetadata(
        issuer=issuer,
        authorization_endpoint=checked_url(
            document.get("authorization_endpoint"), egress, "as_metadata_invalid"
        ),
        token_endpoint=checked_url(document.get("token_endpoint"), egress, "as_metadata_invalid"),
        registration_endpoint=(
            None
            if registration is None
            else checked_url(registration, egress, "as_metadata_invalid")
        ),
        scopes_supported=scopes,
        auth_methods_supported=(
            _strings(document, "token_endpoint_auth_methods_supported") or ("client_secret_basic",)
        ),
        metadata_document_supported=_flag(document, "client_id_metadata_document_supported"),
        iss_parameter_supported=_flag(document, "authorization_response_iss_parameter_supported"),
    )


async def discover_server(
    fetcher: Fetcher, egress: EgressConfig, issuer: str, *, clock: FlowClock, scope: str
) -> ServerMetadata:
    """The metadata of ``issuer`` (an issuer URL as the resource metadata publishes it)."""
    checked_url(issuer, egress, "prm_invalid")
    parts = urlsplit(issuer)
    if parts.query or parts.fragment:  # RFC 8414 §2: an issuer has neither
        raise failure("prm_invalid")
    for url in metadata_urls(issuer):
        document = await get_document(
            fetcher, checked_url(url, egress, "prm_invalid"), clock=clock, scope=scope
        )
        if document is not None:
            return _parse(document, issuer, egress)
    raise failure("as_metadata_not_found")
