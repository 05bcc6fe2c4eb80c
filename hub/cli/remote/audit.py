"""``hub audit tail|verify``: the tenant's audit trail (DESIGN §11).

Written against ``GET /tenants/{t}/audit`` (a cursor-paginated list, oldest first) and
``GET /tenants/{t}/audit/verify`` (the hash chain's check). ``tail`` reads the newest rows
(``order=newest``, as many as it prints) and prints them oldest first (only those matching
``--action``, ``--actor``, ``--outcome`` and ``--since``, filtered by the hub, when given);
``--follow`` then asks every ``--interval`` seconds for the rows placed after the last one seen
in the chain (``after_seq``). ``verify`` prints the hub's answer and exits 1 when the chain is
reported broken; ``verify --local`` checks the database directly (:mod:`hub.cli.audit`).
"""

from __future__ import annotations

import re
import time
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hub.cli.audit import verify_local
from hub.cli.remote import resolve
from hub.cli.remote.client import PAGE_LIMIT
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, is_id, remote
from hub.cli.remote.output import Column, progress
from hub.cli.remote.profiles import DEFAULT_PROFILE

if TYPE_CHECKING:
    from hub.audit.chain import Anchor

__all__ = ["audit_app"]

audit_app = typer.Typer(no_args_is_help=True, help="The audit trail.")


def _columns(names: dict[Any, Any]) -> list[Column]:
    return [
        Column.time("AT", "at"),
        Column.named("ACTOR", "actor_id", names),
        Column.of("ACTION", "action"),
        Column.of("RESOURCE", "resource", 60),
        Column.of("OUTCOME", "outcome"),
        Column.of("REQUEST", "request_id"),
    ]


PLATFORM_TRAIL = "/platform/audit"


def _trail(r: Remote, platform: bool) -> str:
    """The trail's path: the tenant's, or the platform's own chain (its admins' keys,
    bootstrap, tenants made and ended)."""
    return PLATFORM_TRAIL if platform else r.path("audit")


def _newest(r: Remote, trail: str, last: int, filters: dict[str, Any]) -> list[dict[str, Any]]:
    """The newest ``last`` rows, oldest of them first: read newest first (``order=newest``), so
    the cost is the rows shown, not the length of the trail."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    with progress("reading the audit trail", total=last) as update:
        while len(rows) < last:
            limit = min(PAGE_LIMIT, last - len(rows))
            params = {**filters, "order": "newest", "limit": limit, "cursor": cursor}
            body = r.client.request("GET", trail, params=_present(params)).json()
            rows.extend(body.get("data") or [])
            update(len(rows))
            cursor = body.get("next_cursor")
            if not cursor:
                break
    return rows[::-1]


def _after(r: Remote, trail: str, filters: dict[str, Any], after_seq: int) -> list[dict[str, Any]]:
    """Every row placed after ``after_seq`` in the chain, in chain order."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {**filters, "after_seq": after_seq, "limit": PAGE_LIMIT, "cursor": cursor}
        body = r.client.request("GET", trail, params=_present(params)).json()
        rows.extend(body.get("data") or [])
        cursor = body.get("next_cursor")
        if not cursor:
            return sorted(rows, key=lambda row: int(row.get("seq") or 0))


def _head_seq(r: Remote, trail: str) -> int:
    """The place of the chain's newest row (0 for an empty chain): where following starts
    when no row was shown."""
    params = {"order": "newest", "limit": 1}
    body = r.client.request("GET", trail, params=params).json()
    return max((int(row.get("seq") or 0) for row in body.get("data") or []), default=0)


def _follow(
    r: Remote,
    trail: str,
    filters: dict[str, Any],
    rows: list[dict[str, Any]],
    columns: list[Column],
    interval: float,
) -> None:
    """Print rows as they come. Each poll asks for the rows after the highest ``seq`` seen: the
    chain numbers rows in the order they were written, so a row committed late (a tool call's,
    written after its answer) is printed even when its time is earlier than rows already shown,
    which polling by time would skip."""
    seen = max((int(row.get("seq") or 0) for row in rows), default=0) or _head_seq(r, trail)
    while True:
        time.sleep(interval)
        fresh = _after(r, trail, filters, seen)
        if fresh:
            r.out.table(fresh, columns)
            seen = max(seen, *(int(row.get("seq") or 0) for row in fresh))


def _present(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class Outcome(StrEnum):
    success = "success"
    denied = "denied"
    failed = "failed"
    pending = "pending"
    unreported = "unreported"


@audit_app.command("tail")
def tail(
    lines: Annotated[int, typer.Option("--lines", "-n", min=1, max=10_000, help="How many.")] = 20,
    action: Annotated[
        str | None,
        typer.Option("--action", metavar="ACTION", help="Only this action, e.g. tool.call."),
    ] = None,
    actor: Annotated[
        str | None, typer.Option("--actor", metavar="PRINCIPAL", help="Only theirs: name or id.")
    ] = None,
    outcome: Annotated[Outcome | None, typer.Option("--outcome", help="Only these.")] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="TIME", help="Only rows at or after (ISO 8601, a zone)."),
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new rows.")] = False,
    interval: Annotated[
        float, typer.Option("--interval", min=0.5, help="Seconds between polls.")
    ] = 2.0,
    tenant: TenantOpt = None,
    platform: Annotated[
        bool, typer.Option("--platform", help="The platform's own trail (platform admin).")
    ] = False,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Print the newest audit rows (and, with --follow, new ones as they come)."""
    if platform and tenant:
        raise typer.BadParameter("--platform reads no tenant's trail: drop --tenant")
    with remote(profile, as_json, tenant) as r:
        if platform and actor and not is_id(actor):
            raise typer.BadParameter("with --platform, --actor is a principal's id")
        filters = _present(
            {
                "action": action,
                "actor": actor
                if platform
                else resolve.principal(r, actor)["id"]
                if actor
                else None,
                "outcome": outcome.value if outcome else None,
                "since": since,
            }
        )
        trail = _trail(r, platform)
        rows = _newest(r, trail, lines, filters)
        columns = _columns({} if platform else resolve.names(r, "principals"))
        r.out.table(rows, columns)
        if follow:
            _follow(r, trail, filters, rows, columns, interval)


@audit_app.command("verify")
def verify(
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            "-t",
            metavar="SLUG",
            help="Tenant slug or id (default: the profile's; with --local: every chain).",
        ),
    ] = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="Read HUB_DATABASE_URL directly (no hub, no key): every chain, or --tenant's.",
        ),
    ] = False,
    platform: Annotated[
        bool,
        typer.Option("--platform", help="The platform's own chain (with --local: it alone)."),
    ] = False,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="SEQ:HASH",
            help="Check only the rows written since an earlier check: its head_seq:head_hash.",
        ),
    ] = None,
) -> None:
    """Check the tenant's audit hash chain (or the platform's); exit 1 when it is broken."""
    if local:
        if after is not None and bool(tenant) == platform:
            raise typer.BadParameter("--after checks one chain: name --tenant or --platform")
        start = _local_anchor(after)
        raise typer.Exit(verify_local([tenant] if tenant else [], platform, as_json, start))
    if platform and tenant:
        raise typer.BadParameter("--platform checks no tenant's chain: drop --tenant")
    params = _anchor(after)
    with remote(profile, as_json, tenant) as r:
        with progress("verifying the audit chain"):
            answer = r.client.get(f"{_trail(r, platform)}/verify", **params)
        fields = answer if isinstance(answer, dict) else {"result": answer}
        r.out.record(fields, [Column.of(key, key) for key in sorted(fields)])
        if fields.get("ok") is False or fields.get("valid") is False:
            raise typer.Exit(1)


def _local_anchor(after: str | None) -> Anchor | None:
    """``SEQ:HASH`` as the place ``--local`` starts its check from (checked here: no hub does)."""
    from hub.audit.chain import Anchor

    if after is None:
        return None
    anchor = _anchor(after)
    if not re.fullmatch(r"[0-9a-f]{64}", anchor["after_hash"]):
        raise typer.BadParameter("expected SEQ:HASH, HASH 64 lowercase hex digits")
    return Anchor(int(anchor["after_seq"]), anchor["after_hash"])


def _anchor(after: str | None) -> dict[str, str]:
    """``SEQ:HASH`` as the query of ``…/audit/verify`` (the hub checks the values)."""
    if after is None:
        return {}
    seq, colon, digest = after.partition(":")
    if not colon or not seq.isdigit() or not digest:
        raise typer.BadParameter("expected SEQ:HASH, an earlier check's head_seq:head_hash")
    return {"after_seq": seq, "after_hash": digest}
