"""Which scopes an authorization asks for (MCP authorization, "Scope Selection Strategy").

In order (2025-11-25 and 2026-07-28):

1. the scopes the operator named in the request, if any;
2. else the ``scope`` of the server's ``WWW-Authenticate`` challenge (RFC 6750 §3);
3. else every scope in the protected resource metadata's ``scopes_supported`` (RFC 9728 §2);
4. else no ``scope`` parameter at all.

A step-up (re-authorising a credential) asks for the union of the scopes the credential has
recorded (its earlier scopes plus every ``insufficient_scope`` challenge seen since) and the
fresh challenge's (2026-07-28 "Step-Up Authorization Flow": union, never a replacement).
``offline_access`` is added whenever the authorization server lists it in its own
``scopes_supported`` (SEP-2207: a refresh token may then be issued), and never otherwise.
Scope tokens follow RFC 6749 §3.3; order is kept and duplicates dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["OFFLINE_ACCESS", "join_scopes", "select_scopes", "union"]

OFFLINE_ACCESS = "offline_access"


def union(*groups: Iterable[str]) -> tuple[str, ...]:
    """Every scope of ``groups``, first occurrence first."""
    return tuple(dict.fromkeys(scope for group in groups for scope in group))


def select_scopes(
    *,
    requested: Sequence[str] | None,
    recorded: Sequence[str],
    challenge: Sequence[str],
    resource_supported: Sequence[str] | None,
    server_supported: Sequence[str] | None,
) -> tuple[str, ...]:
    if requested:
        chosen = union(requested)
    elif challenge:
        chosen = union(challenge)
    elif resource_supported:
        chosen = union(resource_supported)
    else:
        chosen = ()
    chosen = union(recorded, chosen)
    if server_supported and OFFLINE_ACCESS in server_supported:
        chosen = union(chosen, (OFFLINE_ACCESS,))
    return chosen


def join_scopes(scopes: Sequence[str]) -> str | None:
    """The ``scope`` parameter (space-separated), or ``None`` to omit it."""
    return " ".join(scopes) if scopes else None
