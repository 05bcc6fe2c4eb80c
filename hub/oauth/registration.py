"""How the hub is a client of an authorization server (MCP "Client Registration Approaches").

In priority order (2025-11-25 and 2026-07-28):

1. **pre-registered** credentials an operator passed (``client`` in the request), kept for the
   tenant and issuer afterwards;
2. a registration already **kept for this tenant and issuer** (and this redirect URI);
3. a **client ID metadata document** (draft-ietf-oauth-client-id-metadata-document): when the
   authorization server metadata says ``client_id_metadata_document_supported`` and the hub's
   ``HUB_OAUTH_CLIENT_ID_URL`` is https, that URL *is* the client id, the authorization server
   fetches :func:`client_metadata_document` from it, and the client is public (``none``);
4. **dynamic registration** (RFC 7591 §3.1) at the ``registration_endpoint``.

Client credentials are bound to the authorization server that issued them (2026-07-28): they
are kept per (tenant, issuer) and never presented to another issuer, so a server whose
resource metadata moves to a new authorization server gets a new registration.

Dynamic registration sends ``application_type: "web"`` (the hub is a web application, 2026-07-28
requires the field), ``grant_types`` with ``refresh_token`` (SEP-2207), the one redirect URI,
and a ``client_name`` carrying the tenant's name, so the consent screen says where the token
goes. The authentication method (RFC 7591 §2 ``token_endpoint_auth_method``) is the first of
``client_secret_basic``, ``client_secret_post``, ``none`` the server supports; the server's
answer decides in the end (a secret-based method without a secret falls back to ``none``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hub.egress import Fetcher, InvalidJson
from hub.oauth.config import OAuthConfig
from hub.oauth.exceptions import failure
from hub.oauth.http import FlowClock, post

__all__ = [
    "AUTH_METHODS",
    "CLIENT_ID_PATTERN",
    "ClientRegistration",
    "choose_auth_method",
    "client_metadata_document",
    "register_dynamic",
]

AuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]
AUTH_METHODS: tuple[AuthMethod, ...] = ("client_secret_basic", "client_secret_post", "none")
Kind = Literal["pre_registered", "stored", "metadata_document", "dynamic"]
GRANT_TYPES = ["authorization_code", "refresh_token"]


@dataclass(frozen=True)
class ClientRegistration:
    client_id: str
    auth_method: AuthMethod
    kind: Kind
    client_secret: str | None = field(default=None, repr=False)


def choose_auth_method(supported: Sequence[str], *, has_secret: bool) -> AuthMethod:
    """The first method of :data:`AUTH_METHODS` the server supports that the client can use."""
    for method in AUTH_METHODS:
        if method in supported and (has_secret or method == "none"):
            return method
    return "none" if not has_secret else "client_secret_basic"


def client_metadata_document(config: OAuthConfig) -> dict[str, Any]:
    """The hub's client ID metadata document (served at ``/oauth/client-metadata.json``)."""
    return {
        "client_id": config.client_id_url,
        "client_name": config.client_name,
        "client_uri": config.public_url,
        "redirect_uris": [config.redirect_uri],
        "grant_types": GRANT_TYPES,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    }


#: a client id the hub keeps and sends: visible ASCII, as an operator's pre-registered one must be
#: (an authorization server's answer is JSON, which can carry U+0000: PostgreSQL cannot store it)
CLIENT_ID_PATTERN = r"^[\x21-\x7e]+$"
_CLIENT_ID = re.compile(CLIENT_ID_PATTERN)


def _registered(answer: Any, wanted: AuthMethod) -> ClientRegistration:
    if not isinstance(answer, dict):
        raise failure("registration_failed")
    client_id = answer.get("client_id")
    secret = answer.get("client_secret")
    if (
        not isinstance(client_id, str)
        or len(client_id) > 2048
        or not _CLIENT_ID.fullmatch(client_id)
    ):
        raise failure("registration_failed")
    if secret is not None and (not isinstance(secret, str) or not secret or len(secret) > 8192):
        raise failure("registration_failed")
    method = answer.get("token_endpoint_auth_method", wanted)
    if method not in AUTH_METHODS:
        raise failure("registration_failed")
    if method != "none" and secret is None:
        method = "none"
    return ClientRegistration(client_id, method, "dynamic", secret)


async def register_dynamic(
    fetcher: Fetcher,
    endpoint: str,
    *,
    supported_methods: Sequence[str],
    client_name: str,
    redirect_uri: str,
    clock: FlowClock,
    scope: str,
) -> ClientRegistration:
    """RFC 7591 §3.1 registration; refused or malformed answers are ``registration_failed``."""
    wanted = choose_auth_method(supported_methods, has_secret=True)
    request = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": GRANT_TYPES,
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
        "application_type": "web",
    }
    response = await post(fetcher, endpoint, clock=clock, scope=scope, json=request)
    try:
        answer = response.json() if response.status_code in (200, 201) else None
    except InvalidJson:
        answer = None
    return _registered(answer, wanted)
