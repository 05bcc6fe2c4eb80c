"""``--deployment NAME``: a deployment named as the agent's own list names it, resolved to its id.

Every other ``hub`` command takes a deployment's name where it is unique (DESIGN §14); the
sidecar does too. An agent cannot list the tenant's deployments, but ``GET /whoami`` lists the
ones it is the agent of, and those are the only ones its key can serve, so the name is looked up
there: exactly one match, else one line saying why (none, naming the agent's deployments, or
several). ``/whoami`` answers for the key's own tenant, so the name is looked up there only when
that tenant is ``--tenant`` (by id or slug), else it is one line naming the key's tenant: the id
of a same-named deployment of another tenant would only be refused as unknown in this one. The
answer is remembered beside the bundle cache (``names-<hash>.json``, 0600, ids and names only),
so a sidecar started by name while the hub is down still finds the bundle it cached; once the
hub answers again it is asked afresh at the next start.
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


def _in_tenant(config: SidecarConfig, me: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The agent's deployments, when its key is of the tenant the sidecar runs for."""
    own = {str(value) for value in (me.get("tenant_id"), me.get("tenant_slug")) if value}
    if config.tenant not in own:
        whose = f"tenant {me['tenant_slug']!r}" if me.get("tenant_slug") else "no tenant"
        raise SidecarError(
            f"--deployment {name!r}: HUB_AGENT_KEY is a key of {whose}, not of --tenant "
            f"{config.tenant}; give that tenant's agent's key"
        )
    found = me.get("deployments")
    return found if isinstance(found, list) else []


def _one_named(deployments: list[dict[str, Any]], name: str) -> str:
    matches = [str(d.get("id")) for d in deployments if d.get("name") == name]
    if len(matches) > 1:
        raise SidecarError(
            f"--deployment {name!r}: {len(matches)} of this agent's deployments have that "
            "name; give its id"
        )
    if not matches:
        named = sorted({str(d["name"]) for d in deployments if d.get("name")})
        listed = ", ".join(repr(n) for n in named) if named else "none has a name"
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
    deployment_id = _one_named(_in_tenant(config, me, name), name)
    _remember(config, name, deployment_id)
    log.info("sidecar: deployment %r is %s", name, deployment_id)
    return replace(config, deployment=deployment_id)
