"""Static URL rules and origin normalisation for outbound requests (SECURITY §1.2, §1.5).

:func:`validate_url` does no I/O. A URL is accepted only when it is absolute, has a host, carries no
userinfo and no fragment, and its scheme is ``https`` — or ``http`` when loopback is allowed
(``HUB_ALLOW_LOOPBACK``) and the host is a loopback IP literal or ``localhost`` (whose answers the
network backend then requires to be loopback too). Odd numeric hosts such as ``2130706433`` pass
this check on purpose: the resolver turns them into addresses and the destination policy judges
the addresses, never the URL string.

Errors carry the hub's own fixed text and never echo the URL (it may hold a secret in its query).

:func:`origin_of` gives ``scheme://host[:port]``, lowercased, default port dropped: the form used to
pin an operation to an origin and compare request URLs against it.

:func:`is_header_safe_secret` decides whether a bearer token can be sent as a header value.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Protocol

import httpx2

from hub.egress.errors import UrlRejected

__all__ = [
    "LOOPBACK_HINT",
    "PLAIN_HTTP",
    "LoopbackRule",
    "is_header_safe_secret",
    "origin_of",
    "validate_url",
]

MAX_SECRET_LENGTH = 8192
_MAX_URL_LENGTH = 8192
_DEFAULT_PORTS = {"https": 443, "http": 80}

#: The two refusals of plain ``http``: they name the setting, so an operator testing a local
#: server knows what to change (and one on a remote host knows it never will be allowed).
LOOPBACK_HINT = (
    "url must be absolute https; plain http to a loopback address needs the hub to run with "
    "HUB_ALLOW_LOOPBACK=true (development and tests only)"
)
PLAIN_HTTP = (
    "url must be absolute https (plain http only to a loopback address, and only with "
    "HUB_ALLOW_LOOPBACK=true)"
)


def _parse(url: object) -> httpx2.URL:
    if not isinstance(url, str) or not url or len(url) > _MAX_URL_LENGTH:
        raise UrlRejected("url must be absolute https")
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url) or "\\" in url:
        raise UrlRejected("url must not contain whitespace, control characters or backslashes")
    try:
        return httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError):
        raise UrlRejected("url is not a valid absolute url") from None


def _is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LoopbackRule(Protocol):
    """What :func:`validate_url` needs of the egress configuration (``EgressConfig`` has it)."""

    @property
    def allow_loopback(self) -> bool: ...


def validate_url(url: str, config: LoopbackRule) -> str:
    """Apply the static rules to ``url``; return it normalised, or raise :class:`UrlRejected`.

    A pure function of the URL and the loopback rule, so its answers are memoised (every tool call
    checks the same few URLs three times; a refusal is never cached, it raises anew)."""
    if not isinstance(url, str):
        raise UrlRejected("url must be absolute https")
    return _validated(url, bool(config.allow_loopback))


@functools.lru_cache(maxsize=1024)
def _validated(url: str, allow_loopback: bool) -> str:
    parsed = _parse(url)
    scheme = parsed.scheme.lower()
    host = parsed.host
    if scheme not in _DEFAULT_PORTS or not parsed.is_absolute_url or not host:
        raise UrlRejected("url must be absolute https")
    if parsed.userinfo:
        raise UrlRejected("url must not contain credentials")
    if "#" in url:
        raise UrlRejected("url must not contain a fragment")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise UrlRejected("url port is not valid")
    if scheme == "http" and not (allow_loopback and _is_loopback_host(host)):
        raise UrlRejected(LOOPBACK_HINT if _is_loopback_host(host) else PLAIN_HTTP)
    if parsed.port == _DEFAULT_PORTS[scheme]:
        parsed = parsed.copy_with(port=None)
    return str(parsed)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lowercased, without a default port (memoised)."""
    if not isinstance(url, str):
        raise UrlRejected("url must be absolute https")
    return _origin(url)


@functools.lru_cache(maxsize=1024)
def _origin(url: str) -> str:
    parsed = _parse(url)
    scheme = parsed.scheme.lower()
    host = parsed.raw_host.decode("ascii").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        raise UrlRejected("url must be absolute https")
    if ":" in host:
        host = f"[{host}]"
    port = parsed.port
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def is_header_safe_secret(value: str) -> bool:
    """True when ``value`` can be sent as ``Authorization: Bearer <value>`` unchanged.

    Visible ASCII with interior spaces allowed; no control characters (CR, LF, NUL, TAB, DEL), no
    leading or trailing whitespace, non-empty, at most :data:`MAX_SECRET_LENGTH` characters.
    """
    if not isinstance(value, str) or not value or len(value) > MAX_SECRET_LENGTH:
        return False
    if value[0] == " " or value[-1] == " ":
        return False
    return all(0x20 <= ord(ch) <= 0x7E for ch in value)
