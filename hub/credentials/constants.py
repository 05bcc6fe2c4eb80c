"""Credential constants shared with other domains."""

from typing import Final

__all__ = ["CREDENTIAL_TYPES", "CREDENTIAL_TYPES_FOR_MCP", "NO_TOKEN"]

#: The keyless sentinel: a credential whose secret is exactly this string sends no
#: ``Authorization`` header, and fetches with it are pinned to the URL's own origin, as with no
#: credential at all. A ``metadata.mcp.auth = "none"`` credential stores it (DESIGN §3).
NO_TOKEN: Final = "NO_TOKEN"  # noqa: S105 - a documented sentinel, not a secret

#: The closed set of types a credential may be created with (DESIGN §14): ``api_key`` and
#: ``oauth_token`` are sent upstream as a bearer; ``secret`` is stored, encrypted, and never sent
#: anywhere by the hub. Rows of other types from before the set was closed became ``secret``
#: (migration 0202), which is how discovery always treated them.
CREDENTIAL_TYPES: Final = ("api_key", "oauth_token", "secret")

#: Types discovery and the gateway send; any other type (``secret``, or a row some older replica
#: wrote with another type) is never sent and reads as not usable.
CREDENTIAL_TYPES_FOR_MCP: Final = ("api_key", "oauth_token")
