"""Every route that reads the request's session opens it: a route whose dependencies declare
``SessionDep`` (or authenticate on the session, as every REST router's first dependency does)
is a :class:`~hub.core.deps.SessionRoute`; the session it would read does not exist otherwise.
A router made without ``route_class=SessionRoute`` would fail here, not on its first request."""

from __future__ import annotations

from typing import get_args

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from hub.app import create_app
from hub.auth.deps import get_caller
from hub.authz.throttle import rest_rate_limit
from hub.core.deps import SessionDep, SessionRoute
from tests.conftest import make_settings

_SESSION_CALL = get_args(SessionDep)[1].dependency
_NEEDS_SESSION = {_SESSION_CALL, rest_rate_limit, get_caller}


def _calls(dependant: Dependant) -> set[object]:
    found: set[object] = set()
    stack = [dependant]
    while stack:
        item = stack.pop()
        found.add(item.call)
        stack.extend(item.dependencies)
    return found


def test_every_route_reading_the_session_is_a_session_route() -> None:
    routes = [r for r in create_app(make_settings()).routes if isinstance(r, APIRoute)]
    needing = [r for r in routes if _calls(r.dependant) & _NEEDS_SESSION]
    assert len(needing) > 50  # every REST route, the console's and the OAuth callback
    assert [r.name for r in needing if not isinstance(r, SessionRoute)] == []


def test_a_route_without_a_session_of_its_own_has_none_to_read() -> None:
    # the agents' endpoint opens its own read session; health answers with none
    routes = {r.name: r for r in create_app(make_settings()).routes if isinstance(r, APIRoute)}
    for name in ("gateway.mcp", "healthz", "metrics"):
        assert not _calls(routes[name].dependant) & _NEEDS_SESSION, name
