"""The console's browser security (DESIGN §15): cookies, CSRF, same origin, response headers.

- Only ``/console`` accepts the session cookie: it is set with ``Path=/console``, and nothing else
  in the hub reads cookies (the API and the MCP endpoint authenticate by header only).
- Cookies are ``HttpOnly``, ``SameSite=Strict`` and ``Secure`` when the request came over https.
- Every unsafe method, sign-in included, needs the form's CSRF token (or ``X-CSRF-Token``) and a
  same-origin ``Origin`` (or, without one or with ``null``, ``Sec-Fetch-Site: same-origin``, which
  only the browser sets). Before sign-in the
  token is bound to a pre-session cookie, afterwards to the session.
- Pages send a strict CSP with ``frame-ancestors 'none'`` (no framing: no clickjacking of the
  approve button), no referrer to other sites, and ``no-store``.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from fastapi import Request
from starlette.responses import Response

from hub.core.errors import Forbidden

__all__ = [
    "COOKIE_PATH",
    "PRE_COOKIE",
    "SESSION_COOKIE",
    "check_same_origin",
    "check_token",
    "clear_cookie",
    "secure_headers",
    "set_cookie",
]

SESSION_COOKIE = "hub_console"
PRE_COOKIE = "hub_console_pre"
COOKIE_PATH = "/console"
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    # same-origin, not no-referrer: under no-referrer browsers send ``Origin: null`` on forms
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
}


def secure_headers(response: Response, *, cacheable: bool = False) -> Response:
    for name, value in _HEADERS.items():
        response.headers[name] = value
    if not cacheable:
        response.headers["cache-control"] = "no-store"
    return response


def _is_https(request: Request, public_url: str) -> bool:
    return request.url.scheme == "https" or public_url.startswith("https://")


def set_cookie(
    request: Request, response: Response, name: str, value: str, public_url: str
) -> None:
    response.set_cookie(
        name,
        value,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=_is_https(request, public_url),
    )


def clear_cookie(request: Request, response: Response, name: str, public_url: str) -> None:
    response.delete_cookie(
        name,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=_is_https(request, public_url),
    )


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_same_origin(request: Request, public_url: str) -> None:
    """403 unless the unsafe request comes from a console page of this hub."""
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        own = {_origin_of(str(request.base_url)), _origin_of(public_url)}
        if origin.lower() not in own:
            raise Forbidden("cross-origin request refused")
        return
    if request.headers.get("sec-fetch-site") != "same-origin":
        raise Forbidden("cross-origin request refused")


def check_token(presented: str | None, expected: str) -> None:
    """403 unless the request carries the expected CSRF token."""
    if not presented or not hmac.compare_digest(presented.encode(), expected.encode()):
        raise Forbidden("the form's CSRF token is missing or wrong; reload the page")
