"""Rate limits at the edge of the REST API (DESIGN §11), after authentication.

- :func:`rest_rate_limit` — a router-level dependency (:func:`rest_router` puts it, and its
  documented 429, on every authenticated REST router): class ``rest``, per principal. It is the
  first dependency of such a route and authenticates the request itself (the key's checksum,
  then one read on the request's session), so a request without a valid key is a 401 and
  costs no one's budget; the dependencies after it read the caller with
  :func:`hub.auth.deps.caller_of` (FastAPI solves every node of a route's dependency tree on
  every request, cached ones included: fewer nodes, less work per request).
- :func:`enforce` — one class for one key, used by :func:`hub.authz.deps.authorize` for the
  per-tenant ``discovery`` and ``snapshot`` classes *after* the grant decision, so a principal that
  may not discover cannot spend its tenant's budget either.

Refused: 429 ``rate_limited`` with ``Retry-After``, ``RateLimit-Policy`` and ``RateLimit``.
Admitted: the two fields go on the response as well (the classes a request was counted in).
A refused request writes no audit row (a flood would otherwise become database writes); it is
counted in ``hub_rate_limit_refusals_total``.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from hub.auth.deps import caller_of
from hub.core.components import components_of
from hub.core.deps import SessionRoute, answer_with
from hub.core.errors import RateLimited
from hub.core.openapi import RATE_LIMITED
from hub.ratelimit import LimitKind, RateLimiter

__all__ = ["enforce", "rest_rate_limit", "rest_router"]


_FIELDS = ("ratelimit-policy", "ratelimit")  # as Starlette's headers name them


def _merge(response: Response, headers: dict[str, str]) -> None:
    for name in ("RateLimit-Policy", "RateLimit"):
        value = headers.get(name)
        if value is None:
            continue
        existing = response.headers.get(name)
        # both fields are Structured Field lists: a request counted in two classes lists both
        response.headers[name] = f"{existing}, {value}" if existing else value


async def enforce(request: Request, response: Response, kind: LimitKind, key: str) -> None:
    """Count this request in ``kind`` for ``key``; raise 429 when the limit refuses it."""
    parts = components_of(request.app)
    if RateLimiter not in parts:
        return
    decision = await parts.get(RateLimiter).check(kind, key)
    if not decision.allowed:
        raise RateLimited(decision.kind, decision.retry_after_s, dict(decision.headers))
    _merge(response, dict(decision.headers))
    # and on an answer the endpoint builds itself (a 204, a bundle, an export)
    answer_with(request, {k: v for k, v in response.headers.items() if k in _FIELDS})


async def rest_rate_limit(request: Request, response: Response) -> None:
    """Authenticate the request (remembered on it), then count it in class ``rest``, per
    principal. The key and the session are read with plain calls (the key's checksum first: a
    malformed key is a 401 before the session is used), not as dependencies of their own."""
    caller = await caller_of(request)
    await enforce(request, response, "rest", str(caller.principal_id))


def rest_router(prefix: str = "", *, tags: list[str]) -> APIRouter:
    """An authenticated REST router: each of its routes counted in class ``rest`` (429 documented).

    The dependency is the router's own (FastAPI copies it into every route declared on it), so
    the routes can be added to the app flat (:mod:`hub.api`) and keep it.
    """
    return APIRouter(
        prefix=prefix,
        route_class=SessionRoute,
        tags=list(tags),
        dependencies=[Depends(rest_rate_limit)],
        responses={429: RATE_LIMITED},
    )
