"""Which origin a credential may be sent to (DESIGN §5 "Pin").

With a credential holding a secret, requests are pinned to the origin of its ``api_base_url``;
with no credential or the keyless sentinel, to the URL's own origin. ``HUB_EXTRA_ORIGINS`` lists
further origins allowed per pinned origin (the fetcher enforces the pin on every request; this
module lets registration refuse a mismatch before any I/O).
"""

from __future__ import annotations

from hub.core.crypto import Keyring
from hub.core.errors import DiscoveryFailed
from hub.credentials.vault import is_keyless
from hub.egress import EgressConfig, origin_of
from hub.models import Credential

__all__ = ["ORIGIN_REFUSED_MESSAGE", "ensure_within_pin", "pin_origin"]

ORIGIN_REFUSED_MESSAGE = "the url is outside the origin the credential may be sent to"


def pin_origin(keyring: Keyring, credential: Credential | None, url: str) -> str:
    if credential is None or is_keyless(keyring, credential):
        return origin_of(url)
    if credential.api_base_url is None:  # a secret with no provider origin is never sent
        raise DiscoveryFailed("origin_refused", ORIGIN_REFUSED_MESSAGE)
    return origin_of(credential.api_base_url)


def ensure_within_pin(egress: EgressConfig, pin: str, url: str) -> None:
    if origin_of(url) not in egress.allowed_origins(pin):
        raise DiscoveryFailed("origin_refused", ORIGIN_REFUSED_MESSAGE)
