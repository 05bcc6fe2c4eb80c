"""Names accepted wherever they are unique (DESIGN §14), resolved client-side by list calls.

A principal, credential or deployment may be named by its id or by its name; a name must match
exactly one object (live ones first: a deleted principal or revoked credential sharing a name
with a live one does not make the name ambiguous). Keys are named by id or by their display
prefix (``hub_<kid>``). A grant's resource pattern may name a principal, credential or
deployment by name too (``credential:gh-token``). Tenants need nothing here: the hub itself
accepts a slug in ``{t}``, and servers are named by their handle in paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hub.cli.remote.client import RemoteError
from hub.cli.remote.context import Remote, is_id
from hub.cli.remote.output import note, safe

__all__ = [
    "credential",
    "deployment",
    "key",
    "names",
    "one_named",
    "principal",
    "resource",
    "warn_shared_name",
]

Item = dict[str, Any]


def one_named(
    items: list[Item],
    ref: str,
    what: str,
    *,
    key: str = "name",
    live: Callable[[Item], bool] = lambda _item: True,
) -> Item:
    """The one item whose ``key`` is ``ref`` (preferring live ones), else a clear error."""
    matches = [item for item in items if item.get(key) == ref]
    if len(matches) > 1:
        alive = [item for item in matches if live(item)]
        matches = alive if alive else matches
    if not matches:
        raise RemoteError(f"no {what} named {ref!r} in this tenant")
    if len(matches) > 1:
        raise RemoteError(f"{len(matches)} {what}s are named {ref!r}; use an id instead")
    return matches[0]


def principal(r: Remote, ref: str) -> Item:
    if is_id(ref):
        return dict(r.client.get(r.path("principals", ref)))
    items = r.client.list_all(r.path("principals"))
    return one_named(items, ref, "principal", live=lambda p: p.get("status") == "active")


def credential(r: Remote, ref: str) -> Item:
    if is_id(ref):
        return dict(r.client.get(r.path("credentials", ref)))
    items = r.client.list_all(r.path("credentials"))
    return one_named(items, ref, "credential", live=lambda c: c.get("status") != "revoked")


def deployment(r: Remote, ref: str) -> Item:
    if is_id(ref):
        return dict(r.client.get(r.path("deployments", ref)))
    return one_named(r.client.list_all(r.path("deployments")), ref, "deployment")


#: what each collection counts as live (a revoked credential's name is free to take again)
_LIVE: dict[str, Callable[[Item], bool]] = {
    "principals": lambda p: p.get("status") == "active",
    "credentials": lambda c: c.get("status") != "revoked",
    "deployments": lambda _d: True,
}


def warn_shared_name(r: Remote, collection: str, made: Item) -> None:
    """After a create: say so when another live object already had ``made``'s name. The hub
    accepts it (names need not be unique), but every command naming either then needs its
    id; a reviewer found out only when the README's next command failed."""
    name = made.get("name")
    if not name:
        return
    try:
        items = r.client.list_all(r.path(collection))
    except RemoteError:  # may create but not list: nothing more to say
        return
    live = _LIVE[collection]
    others = [i for i in items if i.get("name") == name and i.get("id") != made.get("id")]
    if any(live(i) for i in others):
        note(
            safe(
                f"another of the tenant's {collection} is named {name!r}: commands that name"
                f" either need its id now (`hub {collection} list`)"
            )
        )


def key(items: list[Item], ref: str) -> Item:
    """A key of a listed set, by id or display prefix."""
    if is_id(ref):
        return one_named(items, ref, "key", key="id")
    return one_named(items, ref, "key", key="prefix", live=lambda k: k.get("revoked_at") is None)


def names(r: Remote, collection: str) -> dict[Any, Any]:
    """id → name of a tenant's ``principals``, ``credentials`` or ``deployments``, for table
    cells; empty with ``--json`` (ids are the data) or when the caller may not list them (the id
    is shown then, as it is for an object without a name)."""
    if r.out.as_json:
        return {}
    try:
        listed = r.client.list_all(r.path(collection))
    except RemoteError:
        return {}
    # a revoked credential or a deleted (disabled) principal says so where it is named
    gone = {"revoked", "disabled"}
    return {
        item["id"]: f"{item['name']} ({item['status']})"
        if item.get("status") in gone
        else item["name"]
        for item in listed
        if item.get("name")
    }


#: Resource kinds whose patterns name objects by id, and the lookup of each by name.
_BY_NAME: dict[str, Callable[[Remote, str], Item]] = {
    "principal": principal,
    "credential": credential,
    "deployment": deployment,
}


def resource(r: Remote, pattern: str) -> str:
    """``pattern`` with a principal's, credential's or deployment's name replaced by its id
    (``credential:gh-token`` → ``credential:3f2…``): the hub's patterns name those by id."""
    kind, colon, qualifier = pattern.partition(":")
    lookup = _BY_NAME.get(kind)
    if not colon or lookup is None or qualifier in ("", "*") or is_id(qualifier):
        return pattern
    return f"{kind}:{lookup(r, qualifier)['id']}"
