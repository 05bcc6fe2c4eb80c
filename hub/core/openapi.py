"""OpenAPI as the API really behaves: 400 with the hub's error body, never FastAPI's 422, and the
two ways to present an API key (``Authorization: Bearer`` or ``x-api-key``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

__all__ = ["DISCOVERY_FAILED", "RATE_LIMITED", "install_openapi"]

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
#: The 429 of rate-limited routes (``Retry-After``, ``RateLimit-Policy``, ``RateLimit``).
RATE_LIMITED: dict[str, Any] = {
    "description": "Rate limited: retry after Retry-After seconds (DESIGN §11)",
    "content": {"application/json": {"schema": _ERROR_REF}},
    "headers": {
        name: {"schema": {"type": "string"}}
        for name in ("Retry-After", "RateLimit-Policy", "RateLimit")
    },
}
_SECURITY_SCHEMES: dict[str, Any] = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "A hub API key (hub_…)"},
    "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
}


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR_REF}}}


def _is_fastapi_validation(response: Any) -> bool:
    return isinstance(response, dict) and "HTTPValidationError" in str(response.get("content"))


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
        for path_item in schema.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.setdefault("responses", {})
                had_validation = _is_fastapi_validation(responses.get("422"))
                if had_validation:
                    del responses["422"]
                if had_validation or operation.get("parameters") or operation.get("requestBody"):
                    responses.setdefault("400", _error_response("Invalid request"))
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
