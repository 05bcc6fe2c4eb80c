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
        *((f"{kind}:*", "read", "allow") for kind in _READ_KINDS),
    ),
    "deployer": (
        ("server:*", "*", "allow"),
        ("catalog:*", "*", "allow"),
        ("deployment:*", "*", "allow"),
        ("credential:*", "read", "allow"),
    ),
    "agent": (),
}
