"""The sidecar bundle: everything a sidecar needs to serve a deployment's tools, and no secret.

Per server: handle, URL, credential id (never its secret), catalog version and hash, and per tool
its name, wire name, grant key ``tool:<handle>.<tool>``, definition hash and whether it may run
without asking. ``allow_without_ask`` is the *effective* flag: listed by the deployment and the
tool does not declare ``destructiveHint: true`` (DESIGN §8). The strong ETag is the hash of the
bundle's canonical JSON, so an unchanged bundle has the same ETag on every replica.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from hub.core.canonical import canonical_json
from hub.deployments.schemas import BundleRead, BundleServer, BundleTool
from hub.deployments.service import ResolvedEntry
from hub.deployments.wirenames import assign_wire_names, grant_key
from hub.models import Deployment

__all__ = ["build_bundle", "etag_matches", "render"]


def _destructive(tool: dict[str, Any]) -> bool:
    annotations = tool.get("annotations")
    return isinstance(annotations, dict) and annotations.get("destructiveHint") is True


def build_bundle(deployment: Deployment, entries: Sequence[ResolvedEntry]) -> BundleRead:
    naming_order = sorted(entries, key=lambda e: (e.server.created_at, e.server.handle))
    wire = assign_wire_names(
        (e.server.handle, [str(t["name"]) for t in e.catalog.tools], e.entry.tool_names == "plain")
        for e in naming_order
    )
    servers = []
    for e in entries:
        listed = set(e.entry.allow_without_ask)
        tools = [
            BundleTool(
                name=str(tool["name"]),
                wire_name=wire[(e.server.handle, str(tool["name"]))],
                grant_key=grant_key(e.server.handle, str(tool["name"])),
                sha256=e.catalog.tool_hashes[str(tool["name"])],
                allow_without_ask=str(tool["name"]) in listed and not _destructive(tool),
                tool=tool,
            )
            for tool in e.catalog.tools
        ]
        servers.append(
            BundleServer(
                handle=e.server.handle,
                url=e.server.url,
                credential_id=e.server.credential_id,
                catalog_version=e.catalog.version,
                catalog_sha256=e.catalog.sha256,
                tools=tools,
            )
        )
    return BundleRead(deployment_id=deployment.id, agent_id=deployment.agent_id, servers=servers)


def render(bundle: BundleRead) -> tuple[bytes, str]:
    """The response body (canonical JSON, serialised once) and its strong ETag."""
    body = canonical_json({"data": bundle.model_dump(mode="json")})
    return body, f'"{hashlib.sha256(body).hexdigest()}"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 §13.1.2: a weak comparison is used for If-None-Match."""
    if not if_none_match:
        return False
    candidates = [c.strip() for c in if_none_match.split(",")]
    return "*" in candidates or any(c.removeprefix("W/") == etag for c in candidates)
