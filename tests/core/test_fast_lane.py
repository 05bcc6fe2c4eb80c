"""A fast lane answers exactly what the router would, without FastAPI's layers in between.

A small app of the hub's own parts (shaped routes, the route index, the exception handlers, the
edge) with one lane route and its neighbours: the lane serves its requests (the scope says so),
with the scope the router would have set; errors reach the app's handlers as through the router;
every other request (another route, another method on the lane's path, a ``root_path``) goes
through FastAPI. And the hub's agents' endpoint is a lane.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import httpx2
import pytest
from fastapi import Depends, FastAPI, Path, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import generate_latest
from starlette.routing import BaseRoute
from starlette.types import Scope

from hub.app import create_app
from hub.core.components import Components
from hub.core.db import Database
from hub.core.errors import Conflict
from hub.core.fastlane import LANE_SCOPE_KEY, FastLanes, install_fast_lanes
from hub.core.handlers import install_exception_handlers
from hub.core.metrics import Metrics
from hub.core.middleware import RequestEdgeMiddleware
from hub.core.route_index import RouteIndex, install_route_index
from hub.core.route_shape import ShapedRoute
from tests.conftest import make_settings


def _served(request: Request, **params: str) -> Response:
    scope = request.scope
    return JSONResponse(
        {
            "params": params,
            "lane": scope.get(LANE_SCOPE_KEY, False),
            "route": scope["route"].path,
            "path_params": scope["path_params"],
        }
    )


def _app(metrics: Metrics, *, lanes: bool = True) -> FastAPI:
    app = FastAPI()
    app.router.route_class = ShapedRoute
    app.state.components = Components()  # no failure hooks
    install_exception_handlers(app)

    @app.post("/things/{a}/do/{b}", name="do")
    async def do(request: Request, a: str, b: Annotated[str, Path(description="b")]) -> Response:
        if a == "conflict":
            raise Conflict("already done")
        if a == "boom":
            raise RuntimeError("boom")
        if a == "read":
            await request.body()
        return _served(request, a=a, b=b)

    @app.get("/things/{a}/do/{b}", name="look")
    async def look(request: Request, a: str, b: str) -> Response:
        return _served(request, a=a, b=b)

    @app.post("/things/{a}/other", name="other")
    async def other(request: Request, a: str) -> Response:
        return _served(request, a=a)

    install_route_index(app)
    if lanes:
        install_fast_lanes(app, ["do"])
    app.add_middleware(RequestEdgeMiddleware, metrics=metrics, max_bytes=64)
    return app


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=_app(Metrics()))
    async with httpx2.AsyncClient(transport=transport, base_url="http://hub") as http:
        yield http


async def test_the_lane_serves_its_route_with_the_routers_scope(
    client: httpx2.AsyncClient,
) -> None:
    answer = await client.post("/things/x-1/do/y%20z")
    assert answer.status_code == 200
    assert answer.json() == {
        "params": {"a": "x-1", "b": "y z"},
        "lane": True,
        "route": "/things/{a}/do/{b}",
        "path_params": {"a": "x-1", "b": "y z"},
    }
    assert answer.headers["x-request-id"]  # the edge still stamps it


async def test_other_requests_go_through_fastapi(client: httpx2.AsyncClient) -> None:
    other = await client.post("/things/x/other")
    assert other.json()["lane"] is False
    assert other.json()["params"] == {"a": "x"}
    looked = await client.get("/things/x/do/y")  # the lane's path, another method
    assert looked.json()["lane"] is False
    assert (await client.delete("/things/x/do/y")).status_code == 405  # the router's answer
    assert (await client.post("/things/x/do/y/")).status_code in (307, 404)  # the router's
    assert (await client.post("/things/x/do")).status_code == 404


async def test_errors_reach_the_apps_handlers_as_through_the_router(
    client: httpx2.AsyncClient,
) -> None:
    conflict = await client.post("/things/conflict/do/y")
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "conflict"

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"x" * 32  # no Content-Length: the edge counts, and refuses past 64 bytes

    too_big = await client.post("/things/read/do/y", content=chunks())
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "payload_too_large"
    boom = await client.post("/things/boom/do/y")  # no handler: the edge's last resort
    assert boom.status_code == 500
    assert "boom" not in boom.text


async def test_the_same_answers_with_and_without_the_lane() -> None:
    answers = []
    for lanes in (True, False):
        metrics = Metrics()
        transport = httpx2.ASGITransport(app=_app(metrics, lanes=lanes))
        async with httpx2.AsyncClient(transport=transport, base_url="http://hub") as http:
            seen = []
            for path in ("/things/a/do/b", "/things/conflict/do/b", "/things/boom/do/b"):
                answer = await http.post(path)
                body = answer.json()
                if "lane" in body:
                    body["lane"] = "either"
                if "error" in body:
                    body["error"].pop("request_id", None)
                seen.append((answer.status_code, body))
            answers.append(seen)
        text = generate_latest(metrics.registry).decode()
        # timed under the route's template, as through the router
        assert 'route="/things/{a}/do/{b}",status="409"' in text
        assert 'route="/things/{a}/do/{b}",status="500"' in text
    assert answers[0] == answers[1]


async def test_a_root_path_is_left_to_the_router() -> None:
    transport = httpx2.ASGITransport(app=_app(Metrics()), root_path="/api")
    async with httpx2.AsyncClient(transport=transport, base_url="http://hub") as http:
        answer = await http.post("/api/things/a/do/b")
    assert answer.status_code == 200
    assert answer.json()["lane"] is False
    assert answer.json()["params"] == {"a": "a", "b": "b"}


def test_a_route_that_needs_fastapi_cannot_be_a_lane() -> None:
    def dependency() -> str:
        return "x"

    app = FastAPI()
    app.router.route_class = ShapedRoute

    @app.post("/dep/{a}", name="dep")
    async def dep(request: Request, a: str, d: Annotated[str, Depends(dependency)]) -> Response:
        return Response()

    @app.post("/query/{a}", name="query")
    async def query(request: Request, a: str, q: str) -> Response:
        return Response()

    @app.post("/number/{n}", name="number")
    async def number(request: Request, n: int) -> Response:
        return Response()

    @app.post("/norequest/{a}", name="norequest")
    async def norequest(a: str) -> Response:
        return Response()

    @app.post("/sync/{a}", name="sync")
    def sync(request: Request, a: str) -> Response:
        return Response()

    with pytest.raises(ValueError, match="route index first"):
        install_fast_lanes(app, ["dep"])
    install_route_index(app)
    for name in ("dep", "query", "number", "norequest", "sync"):
        with pytest.raises(ValueError, match=f"route '{name}' cannot be a fast lane"):
            install_fast_lanes(app, [name])
    with pytest.raises(ValueError, match="no such route: missing"):
        install_fast_lanes(app, ["missing"])


async def test_the_agents_endpoint_is_a_lane() -> None:
    """The hub's ``POST …/deployments/{d}/mcp`` is served by the lane (its 401 says nothing
    of how it was served, so the app's layer is asked)."""
    app = create_app(make_settings(), database=Database.from_url("sqlite+aiosqlite://"))
    stack = app.build_middleware_stack()
    layers = []
    layer: object = stack
    while layer is not None:
        layers.append(layer)
        layer = getattr(layer, "app", None)
    lane = next(layer for layer in layers if isinstance(layer, FastLanes))
    assert [route.name for route in lane.routes] == ["gateway.mcp"]
    edge = next(i for i, layer in enumerate(layers) if isinstance(layer, RequestEdgeMiddleware))
    assert edge < layers.index(lane)  # inside the edge: ids, metrics and the body limit hold


async def test_a_request_the_lane_passes_on_is_searched_for_once() -> None:
    """The lane's search is kept for the router's first look: a POST to another route costs
    one search of the index, not two; a redirect's look (another path) searches anew."""
    app = _app(Metrics())
    index = app.router.routes[0]
    assert isinstance(index, RouteIndex)
    searched: list[str] = []
    find = index.find

    def counted(scope: Scope) -> tuple[BaseRoute, Scope] | None:
        searched.append(scope["path"])
        return find(scope)

    index.find = counted  # type: ignore[method-assign]
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://hub") as http:
        assert (await http.post("/things/x/other")).json()["lane"] is False
        assert searched == ["/things/x/other"]
        searched.clear()
        assert (await http.post("/things/x/do/y")).json()["lane"] is True
        assert searched == ["/things/x/do/y"]
        searched.clear()
        assert (await http.get("/things/x/do/y")).json()["lane"] is False  # no lane for GET
        assert searched == ["/things/x/do/y"]
        searched.clear()
        assert (await http.post("/things/x/other/")).status_code == 307
        assert searched == ["/things/x/other/", "/things/x/other"]
