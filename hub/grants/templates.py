"""Role templates, applied as real grant rows when a principal is created (DESIGN §8 table)."""

from __future__ import annotations

from typing import Final

__all__ = ["ROLE_TEMPLATES", "TemplateGrant"]

TemplateGrant = tuple[str, str, str]  # (resource pattern, action, effect)

_READ_KINDS = ("principal", "credential", "server", "catalog", "deployment")

ROLE_TEMPLATES: Final[dict[str, tuple[TemplateGrant, ...]]] = {
    "tenant_admin": (("*", "*", "allow"),),
    "operator": (
        ("grant:*", "*", "allow"),
        ("approval:*", "*", "allow"),
        ("audit", "*", "allow"),
        # so an operator can grant tools; only a deployment's own agent calls through it
        ("tool:*", "call", "allow"),
        *((f"{kind}:*", "read", "allow") for kind in _READ_KINDS),
    ),
    "deployer": (
        ("server:*", "*", "allow"),
        ("catalog:*", "*", "allow"),
        ("deployment:*", "*", "allow"),
        ("credential:*", "read", "allow"),
        # a server, snapshot or deployment naming a credential needs its use (DESIGN §8)
        ("credential:*", "use", "allow"),
        # a deployment names its agent
        ("principal:*", "read", "allow"),
    ),
    "agent": (),
}
