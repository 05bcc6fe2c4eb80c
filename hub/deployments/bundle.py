"""The sidecar bundle: everything a sidecar needs to serve a deployment's tools, and no secret.

Per server: handle, mode, credential id (never its secret), catalog version and hash, the entry's
``arguments`` and ``tool_names``, and the upstream URL only on a direct-mode entry (DESIGN §15);
per tool its name, wire name, grant key ``tool:<handle>.<tool>``, definition hash, the agent's
*effective* ``effect`` (``allow`` | ``ask``) and ``drifted``. Tools whose effect is ``deny`` are
omitted. ``allow_without_ask`` is the deployment's flag after the ``destructiveHint`` rule.

The effects are the gateway's (the ask ceiling, drift: DESIGN §10.1), which sits above this
package; the wiring plugs them in as the :class:`BundleDecisions` component. The strong ETag is
the hash of the bundle's canonical JSON — which holds the agent's ``grants_version`` and every
tool's effect and drift state — so an unchanged bundle has the same ETag on every replica and a
grant or drift change is a new one.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from hub.core.canonical import canonical_json
from hub.core.tenancy import TenantId
from hub.deployments.repository import ViewRow
from hub.deployments.schemas import BundleRead, BundleServer, BundleTool
from hub.deployments.wirenames import assign_wire_names, grant_key
from hub.mcp import era_from_hint
from hub.models import Catalog

__all__ = [
    "BundleDecisions",
    "BundleEntry",
    "Deciding",
    "ToolDecisions",
    "build_bundle",
    "etag_matches",
    "if_match_holds",
    "render",
]


@dataclass(frozen=True)
class ToolDecisions:
    """The deployment's agent's effective decisions: ``(handle, tool name) → (effect, drifted)``."""

    grants_version: int
    tools: Mapping[tuple[str, str], tuple[Literal["allow", "ask", "deny"], bool]]


@dataclass(frozen=True)
class Deciding:
    """The agent's ``grants_version`` and its decisions on the deployment's tools, computed by
    ``decisions()`` when asked. ``timeless``: no grant of the agent expires or has a time window,
    so the decisions are a function of that version and the view rows alone (a bundle kept by
    those needs none computed); otherwise the clock can change them with nothing written."""

    grants_version: int
    timeless: bool
    decisions: Callable[[], Awaitable[ToolDecisions]]


# (session, tenant, deployment id, agent id, the agent's grants_version when the reader is the
# agent itself and its key's read brought it, else None, the deployment's view rows as
# :func:`~hub.deployments.service.view_rows` read them) -> its decisions on the deployment's tools
BundleDecideFn = Callable[
    [AsyncSession, TenantId, uuid.UUID, uuid.UUID, int | None, Sequence[ViewRow]],
    Awaitable[Deciding],
]


@dataclass(frozen=True)
class BundleEntry:
    """One entry of the bundle: its view row (the entry's and its server's columns, as
    :func:`~hub.deployments.service.view_rows` reads them) and its pinned catalog."""

    row: ViewRow
    catalog: Catalog


@dataclass(frozen=True)
class BundleDecisions:
    decide: BundleDecideFn


def _destructive(tool: dict[str, Any]) -> bool:
    annotations = tool.get("annotations")
    return isinstance(annotations, dict) and annotations.get("destructiveHint") is True


def _tools(
    e: BundleEntry, wire: Mapping[tuple[str, str], str], decisions: ToolDecisions
) -> list[BundleTool]:
    listed = set(e.row.allow_without_ask)
    tools = []
    for tool in e.catalog.tools:
        name = str(tool["name"])
        effect, drifted = decisions.tools.get((e.row.handle, name), ("deny", False))
        if effect == "deny":
            continue
        tools.append(
            BundleTool(
                name=name,
                wire_name=wire[(e.row.handle, name)],
                grant_key=grant_key(e.row.handle, name),
                sha256=e.catalog.tool_hashes[name],
                effect=effect,
                drifted=drifted,
                allow_without_ask=name in listed and not _destructive(tool),
                tool=tool,
            )
        )
    return tools


def build_bundle(
    tenant_id: TenantId,
    deployment_id: uuid.UUID,
    agent_id: uuid.UUID,
    entries: Sequence[BundleEntry],
    decisions: ToolDecisions,
) -> BundleRead:
    naming_order = sorted(entries, key=lambda e: (e.row.created_at, e.row.handle))
    wire = assign_wire_names(
        (e.row.handle, [str(t["name"]) for t in e.catalog.tools], e.row.tool_names == "plain")
        for e in naming_order
    )
    servers = []
    for e in entries:
        direct = e.row.mode == "direct"
        servers.append(
            BundleServer(
                handle=e.row.handle,
                mode="direct" if direct else "relay",
                url=e.row.url if direct else None,
                era=era_from_hint(e.row.era) if direct else None,
                credential_id=e.row.credential_id,
                catalog_version=e.catalog.version,
                catalog_sha256=e.catalog.sha256,
                arguments="schema" if e.row.arguments == "schema" else "strict",
                tool_names="plain" if e.row.tool_names == "plain" else "prefixed",
                tools=_tools(e, wire, decisions),
            )
        )
    return BundleRead(
        tenant_id=tenant_id.value,
        deployment_id=deployment_id,
        agent_id=agent_id,
        grants_version=decisions.grants_version,
        servers=servers,
    )


def render(bundle: BundleRead) -> tuple[bytes, str]:
    """The response body (canonical JSON, serialised once) and its strong ETag."""
    body = canonical_json({"data": bundle.model_dump(mode="json")})
    return body, f'"{hashlib.sha256(body).hexdigest()}"'


def if_match_holds(if_match: str, etag: str) -> bool:
    """RFC 9110 §13.1.1: a strong comparison (a weak tag never matches), or ``*``."""
    candidates = [c.strip() for c in if_match.split(",")]
    return "*" in candidates or etag in candidates


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 §13.1.2: a weak comparison is used for If-None-Match."""
    if not if_none_match:
        return False
    candidates = [c.strip() for c in if_none_match.split(",")]
    return "*" in candidates or any(c.removeprefix("W/") == etag for c in candidates)
