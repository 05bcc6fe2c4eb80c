"""The agents' endpoint is the first of the domains' routes the app tries (every tool call is
matched against the route table in order), and moving it there changed nothing: no other route
matches its paths."""

from __future__ import annotations

from starlette.routing import Route

from hub.app import create_app
from tests.conftest import make_settings

MCP_PATH = "/tenants/0c7f6a8e-2b9d-4c1e-9f3a-5d6b7e8f9a0b/deployments/x/mcp"


def test_the_gateway_routes_come_first_and_alone_match_their_paths() -> None:
    routes = [r for r in create_app(make_settings()).router.routes if isinstance(r, Route)]
    names = [r.name for r in routes]
    first_rest = min(
        i for i, r in enumerate(routes) if r.path.startswith(("/healthz", "/tenants/"))
    )
    assert names[first_rest : first_rest + 2] == ["gateway.mcp", "gateway.mcp_stream"]
    matching = {r.name for r in routes if r.path_regex.match(MCP_PATH)}
    assert matching == {"gateway.mcp", "gateway.mcp_stream"}
