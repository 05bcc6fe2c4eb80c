"""A route's plain dependencies solved ahead of FastAPI's solver (``hub.core.presolve``) give
what FastAPI's own solving gives.

The same routes are served twice: by :class:`hub.core.deps.SessionRoute` (the head of plain
dependencies solved ahead) and by FastAPI's ``APIRoute`` (everything solved by FastAPI). Every
request gets the same status, headers and body from both, and the dependencies are called in
the same order, as often. The one difference by design: a body that is not JSON is refused
after a refusing dependency has run, not before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import httpx2
import pytest
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel

from hub.app import create_app
from hub.core.db import Database
from hub.core.deps import SessionRoute
from hub.core.errors import Unauthorized
from hub.core.handlers import install_exception_handlers
from hub.core.presolve import plan
from tests.conftest import make_settings

CALLS: list[str] = []


async def first(request: Request, response: Response) -> None:
    CALLS.append("first")
    response.headers["x-first"] = request.path_params.get("t", "")


async def shared(request: Request) -> str:
    CALLS.append("shared")
    return "s"


async def uncached(request: Request) -> str:
    CALLS.append("uncached")
    return "u"


async def uses_shared(
    s: Annotated[str, Depends(shared)],
    u: Annotated[str, Depends(uncached, use_cache=False)],
    t: str,
) -> str:
    CALLS.append(f"uses_shared:{t}")
    return s + u + t


async def gate(request: Request, response: Response) -> None:
    CALLS.append("gate")
    if request.headers.get("x-refuse"):
        raise Unauthorized()
    response.status_code = 202
    response.headers["x-gate"] = "open"


async def page(limit: int = 10) -> int:
    CALLS.append(f"page:{limit}")
    return limit


class Body(BaseModel):
    n: int


def _router(route_class: type[APIRoute], provider: FastAPI) -> APIRouter:
    router = APIRouter(
        route_class=route_class,
        dependencies=[Depends(first)],
        dependency_overrides_provider=provider,
    )

    @router.get("/t/{t}/items/{item}")
    async def item(
        item: str,
        s: Annotated[str, Depends(shared)],
        v: Annotated[str, Depends(uses_shared)],
        u: Annotated[str, Depends(uncached, use_cache=False)],
        response: Response,
    ) -> dict[str, str]:
        response.headers["x-endpoint"] = item
        return {"item": item, "s": s, "v": v, "u": u}

    @router.get("/t/{t}/list")
    async def listing(
        s: Annotated[str, Depends(shared)],
        limit: Annotated[int, Depends(page)],
        v: Annotated[str, Depends(uses_shared)],
        opened: Annotated[None, Depends(gate)],
    ) -> dict[str, Any]:
        return {"s": s, "limit": limit, "v": v}

    @router.post("/t/{t}/body")
    async def with_body(
        body: Body, opened: Annotated[None, Depends(gate)], v: Annotated[str, Depends(uses_shared)]
    ) -> dict[str, Any]:
        return {"n": body.n, "v": v}

    return router


def _app(route_class: type[APIRoute]) -> FastAPI:
    app = FastAPI()
    app.state.components = create_app(make_settings()).state.components  # the error handlers'
    app.state.db = Database.from_url("sqlite+aiosqlite://")  # a SessionRoute's session: unused
    install_exception_handlers(app)
    app.router.routes.extend(_router(route_class, app).routes)
    return app


@pytest.fixture
async def apps() -> AsyncIterator[tuple[httpx2.AsyncClient, httpx2.AsyncClient]]:
    ahead, fastapi = _app(SessionRoute), _app(APIRoute)
    async with (
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=ahead), base_url="http://t") as a,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=fastapi), base_url="http://t") as b,
    ):
        yield a, b
    await ahead.state.db.dispose()
    await fastapi.state.db.dispose()


async def _both(
    apps: tuple[httpx2.AsyncClient, httpx2.AsyncClient], method: str, path: str, **kwargs: Any
) -> tuple[tuple[Any, ...], list[str]]:
    seen = []
    for client in apps:
        CALLS.clear()
        response = await client.request(method, path, **kwargs)
        headers = [(k, v) for k, v in response.headers.multi_items() if k != "x-request-id"]
        seen.append(((response.status_code, headers, response.content), list(CALLS)))
    assert seen[0] == seen[1], (method, path)
    return seen[0]


REQUESTS = [
    ("GET", "/t/a/items/x", {}),
    ("GET", "/t/a/list", {}),
    ("GET", "/t/a/list?limit=3", {}),
    ("GET", "/t/a/list?limit=many", {}),  # a query error after dependencies solved ahead
    ("GET", "/t/a/list", {"headers": {"x-refuse": "1"}}),
    ("POST", "/t/a/body", {"json": {"n": 1}}),
    ("POST", "/t/a/body", {"json": {"n": "many"}}),
    ("POST", "/t/a/body", {"json": {"n": "many"}, "headers": {"x-refuse": "1"}}),
    ("POST", "/t/a/body", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), REQUESTS)
async def test_solving_ahead_answers_and_calls_as_fastapi_does(
    apps: tuple[httpx2.AsyncClient, httpx2.AsyncClient],
    method: str,
    path: str,
    kwargs: dict[str, Any],
) -> None:
    await _both(apps, method, path, **kwargs)


async def test_the_calls_are_fastapis_own(
    apps: tuple[httpx2.AsyncClient, httpx2.AsyncClient],
) -> None:
    (status, headers, _), calls = await _both(apps, "GET", "/t/a/items/x")
    assert status == 200
    # the cached dependency once; the uncached one each time it is named, as FastAPI does
    assert calls == ["first", "shared", "uncached", "uses_shared:a", "uncached"]
    assert [k for k, _ in headers if k.startswith("x-")] == ["x-first", "x-endpoint"]
    (status, headers, _), calls = await _both(apps, "GET", "/t/a/list?limit=3")
    assert status == 202  # set by a dependency FastAPI solved after those solved ahead
    assert calls == ["first", "shared", "page:3", "uncached", "uses_shared:a", "gate"]


async def test_a_body_that_is_not_json_is_refused_after_a_refusing_dependency(
    apps: tuple[httpx2.AsyncClient, httpx2.AsyncClient],
) -> None:
    ahead, fastapi = apps
    kwargs: dict[str, Any] = {
        "content": b"{not json",
        "headers": {"content-type": "application/json", "x-refuse": "1"},
    }
    assert (await ahead.post("/t/a/body", **kwargs)).status_code == 401
    assert (
        await fastapi.post("/t/a/body", **kwargs)
    ).status_code == 400  # FastAPI's 422, as the hub answers it
    kwargs["headers"].pop("x-refuse")
    assert (await ahead.post("/t/a/body", **kwargs)).status_code == 400


async def test_overridden_dependencies_are_fastapis_to_solve() -> None:
    app = _app(SessionRoute)

    async def other() -> str:
        return "o"

    app.dependency_overrides[shared] = other
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url="http://t"
    ) as client:
        answer = (await client.get("/t/a/items/x")).json()
    await app.state.db.dispose()
    assert answer["s"] == "o"
    assert answer["v"] == "oua"


def test_the_hot_routes_solve_every_dependency_ahead_and_the_schema_keeps_them() -> None:
    app = create_app(make_settings())
    routes = {r.name: r for r in app.routes if isinstance(r, SessionRoute)}
    for name, count in (("server.get", 3), ("grant.check", 5)):
        route = routes[name]
        ahead = plan(route.dependant, route.param_convertors)
        assert ahead is not None
        assert len(ahead.nodes) == count
        assert ahead.dependant.dependencies == []
        assert len(route.dependant.dependencies) == count  # what the OpenAPI schema reads
    listing = routes["server.list"]  # its page parameters are FastAPI's: the head stops there
    ahead = plan(listing.dependant, listing.param_convertors)
    assert ahead is not None
    assert [n.name for n in ahead.nodes] == [None, "session"]
    assert [d.name for d in ahead.dependant.dependencies] == ["page", "access"]
    planned = [r for r in routes.values() if plan(r.dependant, r.param_convertors)]
    assert len(planned) > len(routes) * 3 // 4
