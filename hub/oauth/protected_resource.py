"""Protected resource metadata discovery: RFC 9728, in the MCP order.

Where to look (MCP authorization, "Protected Resource Metadata Discovery Requirements"; the
order of MCP-PROTOCOL §9 trap 19):

1. ``resource_metadata`` of the server's ``WWW-Authenticate`` challenge (RFC 9728 §5.1);
2. the path-inserted well-known URI (RFC 9728 §3.1): for ``https://ex.com/public/mcp``,
   ``https://ex.com/.well-known/oauth-protected-resource/public/mcp``;
3. the root well-known URI ``https://ex.com/.well-known/oauth-protected-resource``.

The first URL answering a JSON object wins; each is fetched pinned to its own origin. Then
(RFC 9728 §3.3) the document's ``resource`` must name the server: same origin, and a path that
is the server URL's path or a parent of it at a segment boundary (the root document names the
origin). A document naming anything else is refused (``resource_mismatch``) **before** any
authorization server is contacted — MCP-PROTOCOL §6a, SECURITY checklist 34.
``authorization_servers`` (§2) must list at least one issuer URL; the first is used (§7.6
lets the client choose). ``scopes_supported`` feeds scope selection.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hub.egress import EgressConfig, Fetcher, UrlRejected, origin_of, validate_url
from hub.mcp import BearerChallenge, split_scopes
from hub.oauth.exceptions import failure
from hub.oauth.http import FlowClock, checked_url, get_document

__all__ = ["ResourceMetadata", "discover_resource", "resource_covers", "well_known_urls"]

WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class ResourceMetadata:
    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    url: str  # where it was found


def well_known_urls(server_url: str) -> list[str]:
    """RFC 9728 §3.1: path-inserted first (when the URL has a path), then the root."""
    origin = origin_of(server_url)
    path = urlsplit(server_url).path.rstrip("/")
    urls = [f"{origin}{WELL_KNOWN}{path}"] if path else []
    return [*urls, f"{origin}{WELL_KNOWN}"]


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether ``resource`` names the protected resource ``server_url`` is part of."""
    try:
        same_origin = origin_of(resource) == origin_of(server_url)
    except UrlRejected:
        return False
    parts = urlsplit(resource)
    if not same_origin or parts.fragment or parts.query:
        return False
    base = parts.path.rstrip("/")
    path = urlsplit(server_url).path
    return not base or path == base or path.rstrip("/") == base or path.startswith(base + "/")


def _parse(document: dict[str, Any], url: str, egress: EgressConfig) -> ResourceMetadata:
    resource = document.get("resource")
    servers = document.get("authorization_servers")
    if not isinstance(resource, str) or not resource or len(resource) > 2048:
        raise failure("prm_invalid")
    if not isinstance(servers, list) or not servers or len(servers) > 32:
        raise failure("prm_invalid")
    for issuer in servers:
        checked_url(issuer, egress, "prm_invalid")
    raw_scopes = document.get("scopes_supported")
    scopes: tuple[str, ...] | None = None
    if raw_scopes is not None:
        if not isinstance(raw_scopes, list) or not all(isinstance(s, str) for s in raw_scopes):
            raise failure("prm_invalid")
        scopes = split_scopes(" ".join(raw_scopes))
        if scopes is None:
            raise failure("prm_invalid")
    # the issuer strings are kept exactly as published: RFC 8414 §3.3 compares them verbatim
    return ResourceMetadata(resource, tuple(servers), scopes, url)


def _candidates(
    server_url: str, challenge: BearerChallenge | None, egress: EgressConfig
) -> list[str]:
    urls: list[str] = []
    if challenge is not None and challenge.resource_metadata:
        # an unusable hint is skipped: the well-known locations still apply
        with contextlib.suppress(UrlRejected):
            urls.append(validate_url(challenge.resource_metadata, egress))
    urls += [u for u in well_known_urls(server_url) if u not in urls]
    return urls


async def discover_resource(
    fetcher: Fetcher,
    egress: EgressConfig,
    server_url: str,
    challenge: BearerChallenge | None,
    *,
    clock: FlowClock,
    scope: str,
) -> ResourceMetadata:
    """The server's protected resource metadata, checked (see the module docstring)."""
    for url in _candidates(server_url, challenge, egress):
        document = await get_document(fetcher, url, clock=clock, scope=scope)
        if document is None:
            continue
        metadata = _parse(document, url, egress)
        if not resource_covers(metadata.resource, server_url):
            raise failure("resource_mismatch")
        return metadata
    raise failure("prm_not_found")
