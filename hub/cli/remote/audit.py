"""``hub audit tail|verify``: the tenant's audit trail (DESIGN §11).

Written against ``GET /tenants/{t}/audit`` (a cursor-paginated list, oldest first) and
``GET /tenants/{t}/audit/verify`` (the hash chain's check). ``tail`` walks the list to its end
with a progress bar and prints the last rows (only those matching ``--action``, ``--actor``,
``--outcome`` and ``--since``, filtered by the hub, when given); ``--follow`` then re-reads the
last page every ``--interval`` seconds and prints rows it has not shown yet. ``verify`` prints
the hub's answer and exits 1 when the chain is reported broken; ``verify --local`` checks the
database directly (:mod:`hub.cli.audit`).
"""

from __future__ import annotations

import time
from collections import deque
from enum import StrEnum
from typing import Annotated, Any

import typer

from hub.cli.audit import verify_local
from hub.cli.remote import resolve
from hub.cli.remote.client import PAGE_LIMIT
from hub.cli.remote.context import JsonOpt, ProfileOpt, Remote, TenantOpt, remote
from hub.cli.remote.output import Column, progress
from hub.cli.remote.profiles import DEFAULT_PROFILE

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


def _walk(r: Remote, last: int, filters: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The last ``last`` rows, and the cursor that reads the final page again."""
    rows: deque[dict[str, Any]] = deque(maxlen=last)
    cursor: str | None = None
    seen = 0
    with progress("reading the audit trail") as update:
        while True:
            params: dict[str, Any] = {**filters, "limit": PAGE_LIMIT, "cursor": cursor}
            body = r.client.request("GET", r.path("audit"), params=_present(params)).json()
            page = list(body.get("data") or [])
            rows.extend(page)
            seen += len(page)
            update(seen)
            if not body.get("next_cursor"):
                return list(rows), cursor
            cursor = body["next_cursor"]


def _present(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class Outcome(StrEnum):
    success = "success"
    denied = "denied"
    failed = "failed"
    pending = "pending"


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
    profile: ProfileOpt = DEFAULT_PROFILE,
    as_json: JsonOpt = False,
) -> None:
    """Print the newest audit rows (and, with --follow, new ones as they come)."""
    with remote(profile, as_json, tenant) as r:
        filters = _present(
            {
                "action": action,
                "actor": resolve.principal(r, actor)["id"] if actor else None,
                "outcome": outcome.value if outcome else None,
                "since": since,
            }
        )
        rows, cursor = _walk(r, lines, filters)
        columns = _columns(resolve.names(r, "principals"))
        r.out.table(rows, columns)
        shown = {row.get("id") for row in rows}
        while follow:
            time.sleep(interval)
            params = _present({**filters, "limit": PAGE_LIMIT, "cursor": cursor})
            body = r.client.request("GET", r.path("audit"), params=params).json()
            fresh = [row for row in body.get("data") or [] if row.get("id") not in shown]
            if fresh:
                r.out.table(fresh, columns)
                shown.update(row.get("id") for row in fresh)
            if body.get("next_cursor"):
                cursor = body["next_cursor"]


@audit_app.command("verify")
def verify(
    tenant: TenantOpt = None,
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
        bool, typer.Option("--platform", help="With --local: the platform's own chain.")
    ] = False,
) -> None:
    """Check the tenant's audit hash chain; exit 1 when it is broken."""
    if local or platform:
        raise typer.Exit(verify_local([tenant] if tenant else [], platform, as_json))
    with remote(profile, as_json, tenant) as r:
        with progress("verifying the audit chain"):
            answer = r.client.get(r.path("audit", "verify"))
        fields = answer if isinstance(answer, dict) else {"result": answer}
        r.out.record(fields, [Column.of(key, key) for key in sorted(fields)])
        if fields.get("ok") is False or fields.get("valid") is False:
            raise typer.Exit(1)
