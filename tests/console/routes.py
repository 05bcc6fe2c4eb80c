"""Every console route, with what a request to it needs: the tests walk them all (a route the
table does not know fails :func:`console_routes`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fastapi import FastAPI
from fastapi.routing import APIRoute

from hub.console.failures import ACTIONS

__all__ = ["PAGES", "ConsoleRoute", "console_routes", "url_of"]


@dataclass(frozen=True)
class ConsoleRoute:
    name: str
    method: str
    path: str
    query: str = ""
    form: dict[str, str] = field(default_factory=dict)
    tenant: bool = True  # acts in a tenant ({t} in the path)


#: name -> (query string with {placeholders}, form fields with {placeholders})
PAGES: dict[str, tuple[str, dict[str, str]]] = {
    "console.static": ("", {}),
    "console.login_form": ("", {}),
    "console.login": ("", {}),
    "console.logout": ("", {}),
    "console.home": ("", {}),
    "console.tenant_pick": ("t={t}", {}),
    "console.tenant_home": ("", {}),
    "console.approvals": ("", {}),
    "console.approvals_queue": ("", {}),
    "console.approval": ("", {}),
    "console.approval_decide": ("", {"decision": "deny", "note": "no"}),
    "console.deployments": ("", {}),
    "console.deployment": ("", {}),
    "console.servers": ("", {}),
    "console.server": ("", {}),
    "console.catalog": ("", {}),
    "console.catalog_diff": ("from=1&to=2", {}),
    "console.server_oauth": ("", {}),
    "console.grants": ("principal_id={p}", {}),
    "console.grant_check": ("principal_id={p}&resource=tool:peer.search&action=call", {}),
    "console.grant_create": (
        "",
        {"principal_id": "{p}", "resource": "tool:peer.x", "action": "call", "effect": "allow"},
    ),
    "console.grant_delete": ("", {"confirmed": "yes"}),
    "console.credentials": ("", {}),
    "console.credential_create": ("", {"name": "n", "type": "secret", "secret": "s" * 20}),
    "console.credential_secret": ("", {"secret": "s" * 20}),
    "console.credential_oauth": ("", {}),
    "console.audit": ("outcome=success", {}),
    "console.audit_verify": ("", {}),
    "console.not_found": ("", {}),
}

#: pages without an API counterpart: assets, signing in, the front door, the 404 page
UNAUDITED = {
    "console.static",
    "console.login_form",
    "console.login",
    "console.home",
    "console.tenant_pick",
    "console.tenant_home",
    "console.not_found",
}

_PARAM = re.compile(r"{(\w+)(?::path)?}")


def console_routes(app: FastAPI) -> list[ConsoleRoute]:
    found = []
    for route in app.routes:
        if not isinstance(route, APIRoute) or not route.path.startswith("/console"):
            continue
        assert route.name in PAGES, f"add {route.name} to tests/console/routes.py PAGES"
        assert route.include_in_schema is False, route.name
        query, form = PAGES[route.name]
        for method in sorted((route.methods or set()) - {"HEAD"}):
            found.append(
                ConsoleRoute(route.name, method, route.path, query, form, "{t}" in route.path)
            )
    assert {r.name for r in found} == set(PAGES)
    # every page a signed-in request reaches records its refusals under an API action
    assert set(PAGES) - set(ACTIONS) == UNAUDITED
    return found


def url_of(route: ConsoleRoute, ids: dict[str, str]) -> str:
    path = _PARAM.sub(lambda m: ids[m.group(1)], route.path)
    query = route.query.format(**ids)
    return f"{path}?{query}" if query else path


def form_of(route: ConsoleRoute, ids: dict[str, str]) -> dict[str, str]:
    return {k: v.format(**ids) for k, v in route.form.items()}
