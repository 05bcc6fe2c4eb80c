"""Whether a deployment's sidecar can lease its direct-mode credentials (DESIGN §10.5, §15).

A direct-mode entry's calls need its server's credential, leased by the deployment's sidecar
principal, which must hold ``credential:<c>`` : ``use`` for it. Nothing in the write of the
deployment checks that (the grant may come later), so ``hub deployments create|update`` say so
after the write, with the command that grants it, instead of letting the first call fail with
``credential_unavailable``. A caller who may not read the server or check grants sees no note.
"""

from __future__ import annotations

from typing import Any

from hub.cli.remote.client import HubFailure
from hub.cli.remote.context import Remote
from hub.cli.remote.output import note

__all__ = ["warn_unleasable"]


def _name(r: Remote, collection: str, object_id: str) -> str:
    try:
        return str(r.client.get(r.path(collection, object_id)).get("name") or object_id)
    except HubFailure:
        return object_id


def _credential_of(r: Remote, handle: str) -> str | None:
    server = r.client.get(r.path("servers", handle))
    credential = server.get("credential_id")
    return str(credential) if credential else None


def _may_use(r: Remote, sidecar: str, credential: str) -> bool:
    body = {"principal_id": sidecar, "resource": f"credential:{credential}", "action": "use"}
    return bool(r.client.post(r.path("grants", "check"), body)["effect"] == "allow")


def warn_unleasable(r: Remote, deployment: dict[str, Any]) -> None:
    """A note for each direct-mode entry whose credential the sidecar may not use."""
    sidecar = deployment.get("sidecar_id")
    direct = [e["server"] for e in deployment.get("entries") or [] if e.get("mode") == "direct"]
    if not sidecar or not direct:
        return
    try:
        for handle in direct:
            credential = _credential_of(r, handle)
            if credential is None or _may_use(r, str(sidecar), credential):
                continue
            who = _name(r, "principals", str(sidecar))
            what = _name(r, "credentials", credential)
            note(
                f"{handle} is in direct mode, but the sidecar {who} may not use its credential "
                f"{what}: its calls fail until `hub grants add {who} credential:{what} use`"
            )
    except HubFailure as exc:
        if exc.status not in (403, 404):
            raise
