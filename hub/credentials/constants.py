"""Credential constants shared with other domains."""

from typing import Final

__all__ = ["CREDENTIAL_TYPES_FOR_MCP", "NO_TOKEN"]

#: The keyless sentinel: a credential whose secret is exactly this string sends no
#: ``Authorization`` header, and fetches with it are pinned to the URL's own origin, as with no
#: credential at all. A ``metadata.mcp.auth = "none"`` credential stores it (DESIGN §3).
NO_TOKEN: Final = "NO_TOKEN"  # noqa: S105 - a documented sentinel, not a secret

#: Types discovery and the gateway use; any other type is stored but treated as absent.
CREDENTIAL_TYPES_FOR_MCP: Final = ("api_key", "oauth_token")
