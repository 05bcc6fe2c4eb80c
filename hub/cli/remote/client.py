"""A plain HTTP client for the operator's own hub (DESIGN §14).

Not the tenant-egress fetcher of :mod:`hub.egress`: this is the operator's client talking to the
hub they run, so it sends the profile's key to the profile's URL and nowhere else — no redirects
followed (a redirect could carry the key elsewhere), no proxy settings from the environment, TLS
verified against the system store or the profile's ``--hub-ca`` bundle.

Every failure is a :class:`RemoteError` whose ``str`` is one line: the hub's own message, its
error code (with the ``reason`` of an upstream or OAuth failure), the HTTP status and the request
id (what to quote to whoever runs the hub).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx2

from hub import __version__

__all__ = ["HubClient", "HubFailure", "HubUnreachable", "RemoteError"]

#: Connect quickly or say so; reads wait for the hub's own deadlines (a snapshot may take
#: ``HUB_DISCOVERY_TIMEOUT_S``, 30 s by default).
TIMEOUT = httpx2.Timeout(120.0, connect=10.0)
PAGE_LIMIT = 200
MAX_PAGES = 10_000  # a bound on a list walk, should a hub hand out cursors forever


class RemoteError(Exception):
    """Any failure of a remote command; ``str()`` is the one line to print."""


class HubFailure(RemoteError):
    """The hub answered with an error body (or something that is not the hub's JSON)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        request_id: str | None,
        *,
        reason: str | None = None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.reason = reason  # an upstream or OAuth failure's stable code
        self.fields = fields or {}  # the error body's other fields (``credential_sent``, …)
        rid = f", request {request_id}" if request_id else ""
        why = f": {reason}" if reason else ""
        super().__init__(f"{message}{_details(self.fields)} ({code}{why}, HTTP {status}{rid})")


#: how many of a 400's ``details`` the line names, and how long each may be
MAX_DETAILS = 3
MAX_DETAIL_CHARS = 160


def _details(fields: Mapping[str, Any]) -> str:
    """``: where: what; …`` for a refused request's ``details`` (the hub's validation errors,
    ``loc`` and ``msg`` only: they quote no input), so the one line says what to fix."""
    details = fields.get("details")
    if not isinstance(details, list):
        return ""
    said: list[str] = []
    for detail in details[:MAX_DETAILS]:
        if not isinstance(detail, dict):
            continue
        loc = detail.get("loc")
        where = ".".join(str(part) for part in loc) if isinstance(loc, list) else ""
        what = " ".join(str(detail.get("msg") or "").split())
        if what:
            said.append(f"{where}: {what}"[:MAX_DETAIL_CHARS] if where else what[:MAX_DETAIL_CHARS])
    more = len(details) - MAX_DETAILS
    if more > 0:
        said.append(f"{more} more")
    return f": {'; '.join(said)}" if said else ""


class HubUnreachable(RemoteError):
    """No answer: connection refused, DNS, TLS, timeout."""


def _failure(response: httpx2.Response) -> HubFailure:
    request_id = response.headers.get("x-request-id")
    try:
        error = response.json()["error"]
        code, message = str(error["code"]), str(error["message"])
        reason = str(error["reason"]) if error.get("reason") else None
        fields = dict(error)
        request_id = str(error.get("request_id") or request_id or "") or None
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", "the server did not answer with a hub error body"
        reason, fields = None, {}
    return HubFailure(response.status_code, code, message, request_id, reason=reason, fields=fields)


def _tls_context(ca_file: str | None) -> ssl.SSLContext | bool:
    if ca_file is None:
        return True
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise HubUnreachable(f"--hub-ca {ca_file}: cannot load it ({exc})") from None


class HubClient:
    """Authenticated JSON calls to one hub; ``data`` of the envelope is what methods return."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        hub_ca: str | None = None,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._http = httpx2.Client(
            base_url=self.url,
            headers={"authorization": f"Bearer {key}", "user-agent": f"mcp-hub-cli/{__version__}"},
            verify=_tls_context(hub_ca),
            timeout=TIMEOUT,
            follow_redirects=False,
            trust_env=False,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        try:
            response = self._http.request(method, path, json=json, params=params, headers=headers)
        except httpx2.ConnectError as exc:
            raise HubUnreachable(f"cannot reach {self.url}: {_reason(exc)}") from None
        except httpx2.TimeoutException:
            raise HubUnreachable(f"{self.url} did not answer in time") from None
        except httpx2.TransportError as exc:
            raise HubUnreachable(f"{self.url}: {_reason(exc)}") from None
        if response.status_code >= 400:
            raise _failure(response)
        if 300 <= response.status_code < 400:
            raise HubFailure(
                response.status_code,
                "redirect",
                "the hub answered with a redirect, which is not followed (check the URL)",
                response.headers.get("x-request-id"),
            )
        return response

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """``data`` of the answer, or None for 204."""
        return self.call_data(self.request(method, path, json=json, params=params, headers=headers))

    @staticmethod
    def call_data(response: httpx2.Response) -> Any:
        """``data`` of a hub answer, or None for 204."""
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()["data"]
        except (ValueError, KeyError, TypeError):
            raise HubFailure(
                response.status_code,
                "not_hub_json",
                "the server's answer is not a hub body (is the URL the hub's?)",
                response.headers.get("x-request-id"),
            ) from None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, json={} if body is None else body)

    def patch(self, path: str, body: Any, *, if_match: str | None = None) -> Any:
        """``PATCH``; with ``if_match`` (an ETag from a read), only if that read is current."""
        headers = {"if-match": if_match} if if_match else None
        return self.call("PATCH", path, json=body, headers=headers)

    def read_tagged(self, path: str) -> tuple[Any, str | None]:
        """``data`` of a read and its ``ETag`` (for a conditional ``patch``)."""
        response = self.request("GET", path)
        data = self.call_data(response)
        return data, response.headers.get("etag")

    def delete(self, path: str) -> None:
        self.call("DELETE", path)

    def pages(self, path: str, **params: Any) -> Iterator[list[Any]]:
        """Each page of a list, following ``next_cursor`` to the end."""
        query = {k: v for k, v in params.items() if v is not None}
        query["limit"] = PAGE_LIMIT
        for _ in range(MAX_PAGES):
            body = self.request("GET", path, params=query).json()
            yield list(body.get("data") or [])
            cursor = body.get("next_cursor")
            if not cursor:
                return
            query["cursor"] = cursor

    def list_all(
        self, path: str, *, on_page: Callable[[int], None] | None = None, **params: Any
    ) -> list[Any]:
        """Every item of a list (all pages); ``on_page(count so far)`` after each page."""
        items: list[Any] = []
        for page in self.pages(path, **params):
            items.extend(page)
            if on_page is not None:
                on_page(len(items))
        return items


def _reason(exc: Exception) -> str:
    """A short reason from an httpx2 transport error (TLS failures name ``--hub-ca``)."""
    text = str(exc) or type(exc).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return "TLS certificate verification failed (a private CA? log in with --hub-ca FILE)"
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused (is the hub running at this URL?)"
    return " ".join(text.splitlines()[:1])[:200]
