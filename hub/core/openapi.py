"""OpenAPI as the API really behaves: 400 with the hub's error body, never FastAPI's 422, the
two ways to present an API key (``Authorization: Bearer`` or ``x-api-key``), and every error
status a route can answer, each with the ``ErrorResponse`` schema (DESIGN §14). A route that
cannot answer 401 needs no key, and says so (``security: []``) over the document's default.

Which statuses apply is read from the route itself, so a new route is documented without a list
to keep: 401 and 503 where it authenticates (the key lookup reads the database); 403 where it
also authorises (a tenant or platform route); 404 where its path has a parameter; 409 on methods
that write (a uniqueness race ends as 409 on any of them) except the read-only ``grant.check``;
412 where it takes ``If-Match``; 413 where it takes a body, and 415 where that body is JSON
(:mod:`hub.core.body_encoding`); 422 where the route declares it
(discovery and URL pinning).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, params
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import RouteContext, iter_route_contexts

__all__ = [
    "DISCOVERY_FAILED",
    "ETAG_HEADER",
    "RATE_LIMITED",
    "UPSTREAM_REFUSED",
    "error_response",
    "install_openapi",
]

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "request_id"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "request_id": {"type": "string"},
                "reason": {"type": "string"},
                "resource": {"type": "string", "description": "403: the resource refused"},
                "action": {"type": "string", "description": "403: the action refused"},
                "credential_sent": {
                    "type": "boolean",
                    "description": "422 unauthorized: whether a credential was sent at all",
                },
                "oauth": {
                    "type": "boolean",
                    "description": "422 unauthorized, no credential sent: the server's challenge "
                    "names OAuth metadata, so connect it by OAuth",
                },
                "retry_after_s": {"type": "integer"},
                "limit": {"type": "string"},
                "details": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "loc": {"type": "array", "items": {}},
                            "msg": {"type": "string"},
                        },
                    },
                },
            },
        }
    },
}
_ERROR_REF = {"$ref": "#/components/schemas/ErrorResponse"}

#: The 422 of routes that discover an upstream server (a ``reason`` code, the hub's own message).
DISCOVERY_FAILED: dict[str, Any] = {
    "description": "Discovery failed (reason code, the hub's own message)",
    "content": {"application/json": {"schema": _ERROR_REF}},
}
#: The 422 of routes that check a URL against a credential's pin before any I/O.
UPSTREAM_REFUSED: dict[str, Any] = {
    "description": "The url is outside the origin the credential may be sent to (origin_refused)",
    "content": {"application/json": {"schema": _ERROR_REF}},
}

#: The 429 of rate-limited routes (``Retry-After``, ``RateLimit-Policy``, ``RateLimit``).
RATE_LIMITED: dict[str, Any] = {
    "description": "Rate limited: retry after Retry-After seconds (DESIGN §11)",
    "content": {"application/json": {"schema": _ERROR_REF}},
    "headers": {
        name: {"schema": {"type": "string"}}
        for name in ("Retry-After", "RateLimit-Policy", "RateLimit")
    },
}
#: The ``ETag`` of a response whose representation a conditional request (``If-Match``,
#: ``If-None-Match``) names.
ETAG_HEADER: dict[str, Any] = {
    "ETag": {
        "description": "A strong ETag of the representation, for If-Match or If-None-Match",
        "schema": {"type": "string"},
    }
}
_SECURITY_SCHEMES: dict[str, Any] = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "A hub API key (hub_…)"},
    "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
}


def error_response(description: str) -> dict[str, Any]:
    """A documented error response with the hub's error body."""
    return {"description": description, "content": {"application/json": {"schema": _ERROR_REF}}}


def _is_fastapi_validation(response: Any) -> bool:
    return isinstance(response, dict) and "HTTPValidationError" in str(response.get("content"))


#: Routes that use a write method but change nothing (so cannot conflict).
_READ_ONLY_POSTS = frozenset({"grant.check"})
_WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})


def _tree(dependant: Dependant) -> Iterator[Dependant]:
    """``dependant`` and every dependency under it."""
    stack = [dependant]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(item.dependencies)


def _calls(dependant: Dependant) -> set[str]:
    """The names of every dependency function in ``dependant``'s tree."""
    return {getattr(d.call, "__name__", "") for d in _tree(dependant) if d.call is not None}


def _headers(dependant: Dependant) -> set[str]:
    """The names of every header parameter in ``dependant``'s tree."""
    return {field.name for d in _tree(dependant) for field in d.header_params}


def _error_statuses(route: RouteContext, method: str, operation: dict[str, Any]) -> dict[str, str]:
    calls = _calls(route.dependant)
    path = str(route.path_format)
    statuses: dict[str, str] = {}
    if calls & {"get_caller", "rest_rate_limit"}:
        statuses["401"] = "No valid API key (one body for every cause)"
        statuses["503"] = "The database is unavailable"
    if calls & {"get_tenant_access", "authorize_dependency", "require_platform_admin"}:
        statuses["403"] = "A grant does not allow this (the body names resource and action)"
    if "{" in path:
        statuses["404"] = "Absent, or another tenant's"
    if method in _WRITE_METHODS and route.name not in _READ_ONLY_POSTS:
        statuses["409"] = "Conflicts with the current state (duplicate, stale version, in use)"
    if "if_match" in _headers(route.dependant):
        statuses["412"] = "If-Match names a version that is no longer current"
    if operation.get("requestBody"):
        statuses["413"] = "The request body is larger than HUB_MAX_REQUEST_BYTES"
    if any(not isinstance(field.field_info, params.Form) for field in route.dependant.body_params):
        statuses["415"] = "The body is not UTF-8 JSON sent as it is (a content-encoding, a charset)"
    return statuses


def _routes(app: FastAPI) -> dict[tuple[str, str], RouteContext]:
    """Every documented route by (path, method), through included routers."""
    found = {}
    for context in iter_route_contexts(app.routes):
        if getattr(context, "include_in_schema", False) and context.path_format:
            for method in context.methods or ():
                found[(context.path_format, method.lower())] = context
    return found


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        schema.setdefault("components", {})["securitySchemes"] = _SECURITY_SCHEMES
        schema["security"] = [{"bearer": []}, {"apiKey": []}]
        components = schema["components"].setdefault("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        components["ErrorResponse"] = _ERROR_SCHEMA
        routes = _routes(app)
        for path, path_item in schema.get("paths", {}).items():
            for method, operation in path_item.items():
                responses = operation.setdefault("responses", {})
                had_validation = _is_fastapi_validation(responses.get("422"))
                if had_validation:
                    del responses["422"]
                if had_validation or operation.get("parameters") or operation.get("requestBody"):
                    responses.setdefault("400", error_response("Invalid request"))
                route = routes.get((path, method))
                if route is not None:
                    for status, text in _error_statuses(route, method, operation).items():
                        responses.setdefault(status, error_response(text))
                for status, response in responses.items():  # every error has the one body
                    if status.isdigit() and int(status) >= 400 and "content" not in response:
                        response["content"] = {"application/json": {"schema": _ERROR_REF}}
                if "401" not in responses:  # answered without a key: none to present
                    operation["security"] = []
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
