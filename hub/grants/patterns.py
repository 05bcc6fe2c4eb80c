"""What a grant may say: its resource pattern and its action (DESIGN §8).

A resource pattern is exact (``credential:3f…``), a literal prefix ending at a ``:`` or ``.``
boundary followed by ``*`` (``tool:linear.*``, ``credential:*``), or ``*`` alone; objects named by
id are canonicalised. The action is one of the resource kind's (``*`` everywhere). Everything here
is validation: a :class:`PolicyError`'s message is safe to answer as a 400.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Literal

__all__ = [
    "ACTIONS",
    "ACTIONS_BY_KIND",
    "EFFECTS",
    "Effect",
    "PolicyError",
    "actions_of",
    "check_action",
    "validate_pattern",
]

Effect = Literal["allow", "ask", "deny"]
ACTIONS = ("read", "write", "use", "decide", "call", "*")
EFFECTS: tuple[Effect, ...] = ("allow", "ask", "deny")
RESOURCE_KINDS = (
    "principal",
    "credential",
    "server",
    "catalog",
    "deployment",
    "grant",
    "approval",
    "audit",
    "tool",
)
#: The concrete actions each kind of resource has (DESIGN §8); ``*`` is valid everywhere and
#: stands for the kind's own set. The resource ``*`` covers every kind, hence every action.
ACTIONS_BY_KIND: Mapping[str, tuple[str, ...]] = {
    "tool": ("call",),
    "credential": ("read", "write", "use"),
    "approval": ("read", "decide"),
    "audit": ("read",),
    **dict.fromkeys(("principal", "server", "catalog", "deployment"), ("read", "write")),
    "grant": ("read", "write"),
}
#: Kinds whose objects are named by UUID (canonical: lower-case, hyphenated) and by handle.
ID_KINDS = frozenset({"principal", "credential", "deployment", "grant", "approval"})
HANDLE_KINDS = frozenset({"server", "catalog"})
_LITERAL_RE = re.compile(r"^[A-Za-z0-9_:.\-/@+=~]*$")
_HANDLE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_PATTERN_LENGTH = 512


class PolicyError(ValueError):
    """A pattern, action or condition is invalid; the message is safe to return as a 400."""


def _canonical_qualifier(kind: str, qualifier: str) -> str:
    """The canonical spelling of what a pattern names after ``kind:`` (``*`` or an object)."""
    if qualifier == "*":
        return qualifier
    if kind in ID_KINDS:
        try:
            return str(uuid.UUID(qualifier))  # upper case, no hyphens, braces, urn:uuid: …
        except ValueError:
            raise PolicyError(f"{kind}:<id> must name an id (a UUID) or be {kind}:*") from None
    if kind in HANDLE_KINDS:
        if not _HANDLE_RE.fullmatch(qualifier):
            raise PolicyError(f"{kind}:<handle> must name a server handle or be {kind}:*")
        return qualifier
    # tool:<handle>.* or tool:<handle>.<tool name>
    handle, dot, rest = qualifier.partition(".")
    if not dot or not rest or not _HANDLE_RE.fullmatch(handle):
        raise PolicyError("a tool pattern is tool:*, tool:<handle>.* or tool:<handle>.<tool>")
    return qualifier


def validate_pattern(pattern: str) -> str:
    """The canonical form of ``pattern`` if it is a valid resource pattern, else PolicyError.

    Objects named by id are canonicalised (``credential:3F25…`` → ``credential:3f25…``), so a
    grant written with another spelling of an id still matches the object; a qualifier that can
    name no object of its kind (not a UUID, not a handle) is refused, since it would silently
    never match."""
    if not pattern or len(pattern) > MAX_PATTERN_LENGTH:
        raise PolicyError("resource pattern must be 1 to 512 characters")
    if pattern == "*":
        return pattern
    literal = pattern[:-1] if pattern.endswith("*") else pattern
    if "*" in literal:
        raise PolicyError("'*' may appear only once, at the end of a resource pattern")
    if pattern.endswith("*") and literal[-1:] not in (":", "."):
        raise PolicyError("a trailing '*' must follow a ':' or '.' boundary")
    kind, colon, qualifier = pattern.partition(":")
    if kind not in RESOURCE_KINDS:
        raise PolicyError(
            "resource pattern must start with a known resource kind: "
            + ", ".join(RESOURCE_KINDS)
            + ", or be *"
        )
    if kind == "audit":
        if pattern != "audit":
            raise PolicyError("the audit resource takes no qualifier")
        return pattern
    if not colon or not qualifier:
        raise PolicyError(f"resource pattern must be {kind}:* or {kind}:<what it names>")
    canonical = f"{kind}:{_canonical_qualifier(kind, qualifier)}"
    if not _LITERAL_RE.match(canonical.removesuffix("*")):
        raise PolicyError("resource pattern contains characters that are not allowed")
    return canonical


def actions_of(resource: str) -> tuple[str, ...]:
    """The concrete actions a resource pattern's kind has (every action for ``*``)."""
    kind = resource.split(":", 1)[0]
    return ACTIONS_BY_KIND.get(kind, tuple(a for a in ACTIONS if a != "*"))


def check_action(resource: str, action: str) -> None:
    """PolicyError unless ``action`` is ``*`` or one of the resource kind's actions."""
    if action == "*":
        return
    if action not in actions_of(resource):
        kind = resource.split(":", 1)[0]
        allowed = ", ".join((*actions_of(resource), "*"))
        raise PolicyError(f"the action of a {kind} grant is one of: {allowed}")
