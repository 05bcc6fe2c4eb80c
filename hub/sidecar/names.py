"""``--deployment NAME``: a deployment named as the agent's own list names it, resolved to its id.

Every other ``hub`` command takes a deployment's name where it is unique (DESIGN §14); the
sidecar does too. An agent cannot list the tenant's deployments, but it may list its own (the
deployments list with ``?agent_id=`` itself, no grant needed), and those are the only ones its key
can serve, so the name is looked up there, every page of it (``/whoami`` lists the first 200
only, and an agent with more could not be started by the others' names): exactly one match,
else one line saying why (none, naming some of the agent's deployments and how many more it
has, or several). ``/whoami`` names the agent and answers for the key's own tenant, so the name
is looked up only when that tenant is ``--tenant`` (by id or slug), else it is one line naming
the key's tenant: the id of a same-named deployment of another tenant would only be refused as
unknown in this one. The walk reads at most ``MAX_PAGES`` pages (each bounded in time and size
by the hub client), so a hub handing out cursors forever is left with one line. The answer is
remembered beside the bundle cache (``names-<hash>.json``, 0600, ids and names only), so a
sidecar started by name while the hub is down still finds the bundle it cached; once the hub
answers again it is asked afresh at the next start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from hub.core import portable_json
from hub.sidecar.cache import FILE_DEPTH, write_private
from hub.sidecar.config import SidecarConfig
from hub.sidecar.errors import HubRefused, HubUnreachable, SidecarError
from hub.sidecar.hubclient import HubClient

__all__ = ["resolved"]

log = logging.getLogger("hub.sidecar")


def _remembered_path(config: SidecarConfig) -> Path:
    name = hashlib.sha256(f"{config.hub}\n{config.tenant}".encode()).hexdigest()[:32]
    return config.cache_dir / f"names-{name}.json"


def _remembered(config: SidecarConfig) -> dict[str, str]:
    try:
        raw = portable_json.loads(_remembered_path(config).read_bytes(), max_depth=FILE_DEPTH)
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def _remember(config: SidecarConfig, name: str, deployment_id: str) -> None:
    known = _remembered(config)
    if known.get(name) == deployment_id:
        return
    known[name] = deployment_id
    write_private(_remembered_path(config), json.dumps(known, sort_keys=True).encode())


#: Deployments asked for a page (the list's most) and the pages read before the lookup gives
#: up: 10,000 deployments of one agent, far past any real one's count.
PAGE_LIMIT = 200
MAX_PAGES = 50
#: The names a "no deployment of that name" line shows at most (then how many more there are).
NAMES_SHOWN = 20


def _check_tenant(config: SidecarConfig, me: dict[str, Any], name: str) -> None:
    """Refuse a key that is not of the tenant the sidecar runs for."""
    own = {str(value) for value in (me.get("tenant_id"), me.get("tenant_slug")) if value}
    if config.tenant not in own:
        whose = f"tenant {me['tenant_slug']!r}" if me.get("tenant_slug") else "no tenant"
        raise SidecarError(
            f"--deployment {name!r}: HUB_AGENT_KEY is a key of {whose}, not of --tenant "
            f"{config.tenant}; give that tenant's agent's key"
        )


def _id_of(value: object) -> str | None:
    """``value`` as a canonical id, or None when it is not one."""
    try:
        return str(uuid.UUID(value)) if isinstance(value, str) else None
    except ValueError:
        return None


def _agent_of(me: dict[str, Any], name: str) -> str | None:
    """The key's principal id when it is an agent (None: another kind, which has no
    deployments to be named, as ``/whoami`` listed none for it)."""
    found = me.get("principal")
    principal: dict[str, Any] = found if isinstance(found, dict) else {}
    agent_id = _id_of(principal.get("id"))
    if agent_id is None:
        raise SidecarError(
            f"--deployment {name!r}: the hub's /whoami named no principal for HUB_AGENT_KEY"
        )
    return agent_id if principal.get("kind") == "agent" else None


async def _own(
    hub: HubClient, config: SidecarConfig, agent_id: str | None, name: str
) -> list[tuple[str, str | None]]:
    """The agent's deployments as (id, name), every page of its own list (an item whose id is
    not one is skipped: it would become the bundle's path and the remembered answer)."""
    if agent_id is None:
        return []
    found: list[tuple[str, str | None]] = []
    params = {"agent_id": agent_id, "limit": str(PAGE_LIMIT)}
    for _ in range(MAX_PAGES):
        items, cursor = await hub.get_page(f"/tenants/{config.tenant}/deployments", params)
        for item in items:
            deployment_id = _id_of(item.get("id") if isinstance(item, dict) else None)
            if deployment_id is not None:
                named = item.get("name")
                found.append((deployment_id, named if isinstance(named, str) else None))
        if cursor is None:
            return found
        params["cursor"] = cursor
    raise SidecarError(
        f"--deployment {name!r}: the hub listed more than {MAX_PAGES} pages of this agent's "
        "deployments; give the deployment's id"
    )


def _one_named(deployments: list[tuple[str, str | None]], name: str) -> str:
    matches = [deployment_id for deployment_id, named in deployments if named == name]
    if len(matches) > 1:
        raise SidecarError(
            f"--deployment {name!r}: {len(matches)} of this agent's deployments have that "
            "name; give its id"
        )
    if not matches:
        named = sorted({n for _, n in deployments if n})
        listed = ", ".join(repr(n) for n in named[:NAMES_SHOWN]) or "none has a name"
        if len(named) > NAMES_SHOWN:
            listed += f", and {len(named) - NAMES_SHOWN} more"
        raise SidecarError(
            f"--deployment {name!r}: this agent has no deployment of that name ({listed})"
        )
    return matches[0]


async def resolved(config: SidecarConfig) -> SidecarConfig:
    """``config`` with ``deployment`` an id: as given, or the agent's deployment of that name."""
    try:
        uuid.UUID(config.deployment)
    except ValueError:
        pass
    else:
        return config
    name = config.deployment
    hub = HubClient(config)
    try:
        me = await hub.get("/whoami")
        _check_tenant(config, me, name)
        deployments = await _own(hub, config, _agent_of(me, name), name)
    except HubRefused as exc:
        raise SidecarError(f"--deployment {name!r}: cannot look the name up: {exc}") from None
    except HubUnreachable as exc:
        known = _remembered(config).get(name)
        if known is None and exc.tls:  # the hub's certificate is the problem, not the name
            raise SidecarError(str(exc)) from None
        if known is None:
            raise SidecarError(
                f"{exc}, and the deployment name {name!r} was never resolved here: "
                "give its id, or start once with the hub up"
            ) from None
        log.warning("sidecar: %s; using the id %s last resolved for %r", exc, known, name)
        return replace(config, deployment=known)
    finally:
        await hub.aclose()
    deployment_id = _one_named(deployments, name)
    _remember(config, name, deployment_id)
    log.info("sidecar: deployment %r is %s", name, deployment_id)
    return replace(config, deployment=deployment_id)
