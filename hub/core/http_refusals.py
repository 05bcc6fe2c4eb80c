"""The answers :mod:`hub.core.http_protocol` writes itself, before (or instead of) the app: the
hub's JSON error body with a request id of its own, in the body and in ``x-request-id``, as
every answer of the hub has (DESIGN §4). Such a request never reached
:mod:`hub.core.middleware`, which gives the others theirs; the id is made at refusal only, and
the log line of the refusal names it."""

from __future__ import annotations

import json
import logging
from typing import Any, NamedTuple

from hub.core.errors import error_body
from hub.core.middleware import new_request_id

__all__ = ["Refusal"]

logger = logging.getLogger("hub.core.http_protocol")


class Refusal(NamedTuple):
    """An answer of the protocol's: its status line, error code and message."""

    status: bytes  # the status line after the version (and any header lines of its own)
    code: str
    message: str

    def answered(self) -> tuple[str, bytes]:
        """A new request id, and the whole response (``connection: close``) that carries it."""
        request_id = new_request_id()
        body = json.dumps(error_body(self.code, self.message, request_id)).encode()
        response = b"".join(
            [
                b"HTTP/1.1 " + self.status + b"\r\n",
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode() + b"\r\n",
                b"x-request-id: " + request_id.encode() + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        return request_id, response

    def logged(self, why: str, **extra: Any) -> bytes:
        """:meth:`answered`'s response, its refusal logged (``why``) with its request id."""
        request_id, response = self.answered()
        logger.warning(why, extra={"request_id": request_id, **extra})
        return response

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        """The answer as an ASGI app, for a request uvicorn has begun a cycle for; the status
        is the first three digits of :attr:`status`, its first line alone."""
        request_id = new_request_id()
        why = f"http: refused with {self.status[:3].decode()}: {self.message}"
        logger.warning(why, extra={"request_id": request_id})
        body = json.dumps(error_body(self.code, self.message, request_id)).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-request-id", request_id.encode()),
            (b"connection", b"close"),
        ]
        status = int(self.status[:3])
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
