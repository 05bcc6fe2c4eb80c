"""The sidecar's plain HTTP client for its hub: bounded in time, size and shape.

The hub URL is the operator's, so this is not the tenant-egress fetcher: a verified-TLS client
(the system store or ``--hub-ca``), no redirects followed (one could carry the agent's key
elsewhere), no proxy settings from the environment. Every exchange has an overall deadline (a
hub that drips bytes cannot hold a call), a body cap read as a stream (an oversized answer is
cut off, never buffered whole), a content-type check and the strict JSON parse of the hub's own
endpoint (:mod:`hub.core.portable_json`: nothing nested past ``MAX_JSON_DEPTH``, no ``NaN``,
a lone surrogate read as U+FFFD); any breach is :class:`HubUnreachable` with a one-line reason,
so a hostile or broken hub cannot hang or crash the sidecar, or hand the agent what is not JSON.
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2

from hub import __version__
from hub.core import portable_json
from hub.egress.responses import MAX_JSON_DEPTH
from hub.sidecar.config import SidecarConfig
from hub.sidecar.errors import HubRefused, HubUnreachable

__all__ = ["BundleFetch", "HubClient"]

MAX_BUNDLE_BYTES = 16 * 1024 * 1024
MAX_ANSWER_BYTES = 4 * 1024 * 1024
BUNDLE_DEADLINE_S = 10.0
CONNECT_TIMEOUT_S = 5.0
_RPC_STATUSES = frozenset({200, 400, 401, 403, 404, 413, 429, 503})


@dataclass(frozen=True)
class BundleFetch:
    status: int  # 200 or 304
    etag: str | None
    body: bytes | None = None


def _tls(ca_file: str | None) -> ssl.SSLContext | bool:
    if ca_file is None:
        return True
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise HubUnreachable(f"--hub-ca {ca_file}: cannot load it ({type(exc).__name__})") from None


def _tls_reason(exc: BaseException, ca_file: str | None) -> str | None:
    """One line naming the TLS failure under a connect error (None when it was not TLS): the
    certificate's verification and its cause, and what to give the sidecar."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = cause.verify_message or cause.reason or "rejected"
            advice = (
                "give the hub's CA with --hub-ca"
                if ca_file is None
                else f"is --hub-ca {ca_file} the hub's CA, and the URL's host its name?"
            )
            return f"TLS: certificate verify failed: {why} ({advice})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or type(cause).__name__}"
        cause = cause.__cause__ or cause.__context__
    return None


def _retry_after(response: httpx2.Response, error: dict[str, Any]) -> float | None:
    """When a refusal says to try again: its body's ``retry_after_s``, else its
    ``Retry-After`` in seconds (a date is not read: the caller's backoff applies)."""
    found = error.get("retry_after_s")
    if isinstance(found, int | float) and not isinstance(found, bool) and found >= 0:
        return float(found)
    header = response.headers.get("retry-after", "").strip()
    return float(header) if header.isdigit() else None


def _is_json(response: httpx2.Response) -> bool:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json"


def _strict(raw: bytes) -> Any:
    """The hub's answer parsed as strictly as the hub parses its peers' (a ``ValueError`` when
    it is not JSON the sidecar could pass on: ``json.loads`` gave ``RecursionError`` on deep
    nesting, and ``NaN`` went on to the agent)."""
    return portable_json.loads(raw, max_depth=MAX_JSON_DEPTH, surrogates="replace")


class HubClient:
    """One pooled client to one hub, authenticated with the agent's key."""

    def __init__(
        self,
        config: SidecarConfig,
        *,
        key: str | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._config = config
        self._http = httpx2.AsyncClient(
            base_url=config.hub,
            headers={
                "authorization": f"Bearer {key or config.agent_key}",
                "user-agent": f"mcp-hub-sidecar/{__version__}",
            },
            verify=_tls(config.hub_ca),
            timeout=httpx2.Timeout(config.call_timeout_s, connect=CONNECT_TIMEOUT_S),
            follow_redirects=False,
            trust_env=False,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _exchange(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str],
        body: bytes | None,
        deadline_s: float,
        max_bytes: int,
        params: dict[str, str] | None = None,
    ) -> tuple[httpx2.Response, bytes]:
        where = self._config.hub
        sent = False  # once the whole request is written, the hub may act on it

        async def trace(event: str, _: dict[str, Any]) -> None:
            nonlocal sent
            if event.endswith("send_request_body.complete"):
                sent = True

        try:
            with anyio.fail_after(deadline_s):
                request = self._http.build_request(
                    method,
                    path,
                    params=params,
                    headers=headers,
                    content=body,
                    extensions={"trace": trace},
                )
                response = await self._http.send(request, stream=True)
                sent = True  # the hub answered (an in-process transport traces nothing)
                try:
                    data = bytearray()
                    async for chunk in response.aiter_bytes():
                        data.extend(chunk)
                        if len(data) > max_bytes:
                            raise HubUnreachable(
                                f"{where} answered with more than {max_bytes} bytes", sent=True
                            )
                finally:
                    await response.aclose()
        except TimeoutError:
            raise HubUnreachable(
                f"{where} did not answer within {deadline_s:g} s", sent=sent
            ) from None
        except httpx2.ConnectError as exc:
            tls = _tls_reason(exc, self._config.hub_ca)
            if tls is not None:
                raise HubUnreachable(f"{where}: {tls}", tls=True) from None
            raise HubUnreachable(f"cannot connect to {where}") from None
        except httpx2.TimeoutException:
            raise HubUnreachable(f"{where} did not answer in time", sent=sent) from None
        except httpx2.TransportError as exc:
            raise HubUnreachable(f"{where}: {type(exc).__name__}", sent=sent) from None
        return response, bytes(data)

    async def bundle(self, etag: str | None) -> BundleFetch:
        """The deployment's bundle, or 304 when ``etag`` still matches."""
        headers = {"accept": "application/json"}
        if etag:
            headers["if-none-match"] = etag
        response, body = await self._exchange(
            "GET",
            f"{self._config.deployment_path}/bundle",
            headers=headers,
            body=None,
            deadline_s=BUNDLE_DEADLINE_S,
            max_bytes=MAX_BUNDLE_BYTES,
        )
        status = response.status_code
        if status == 304:
            if not etag:  # nothing was asked to be confirmed: a broken hub or proxy
                raise HubUnreachable("the hub answered 304 to a bundle request with no ETag")
            return BundleFetch(304, response.headers.get("etag") or etag)
        if status == 401:
            raise HubRefused(401, "the hub refused HUB_AGENT_KEY (HTTP 401): check the key")
        if status in (403, 404):
            raise HubRefused(
                status,
                f"deployment {self._config.deployment} of tenant {self._config.tenant} is unknown "
                f"to the hub or not this agent's (HTTP {status})",
            )
        if status != 200:
            raise HubUnreachable(f"{self._config.hub} answered the bundle read with HTTP {status}")
        if not _is_json(response):
            raise HubUnreachable(f"{self._config.hub} answered the bundle read with no JSON")
        return BundleFetch(200, response.headers.get("etag"), body)

    async def mcp(self, message: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """One JSON-RPC exchange with the deployment's MCP endpoint: the answer's object."""
        response, body = await self._exchange(
            "POST",
            f"{self._config.deployment_path}/mcp",
            headers={
                **headers,
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
            body=json.dumps(message).encode(),
            deadline_s=self._config.call_timeout_s,
            max_bytes=MAX_ANSWER_BYTES,
        )
        if response.status_code not in _RPC_STATUSES or not _is_json(response):
            raise HubUnreachable(
                f"{self._config.hub} answered the call with HTTP {response.status_code} and no "
                "JSON-RPC body",
                sent=True,
            )
        try:
            answer = _strict(body)
        except ValueError:
            raise HubUnreachable(
                f"{self._config.hub} answered the call with malformed JSON", sent=True
            ) from None
        if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
            raise HubUnreachable(
                f"{self._config.hub} answered the call with no JSON-RPC object", sent=True
            )
        return answer

    async def get(self, path: str) -> dict[str, Any]:
        """``data`` of a REST read, bounded as a bundle read is, refused and checked as
        :meth:`post`'s answers are."""
        return await self._rest("GET", path, None, BUNDLE_DEADLINE_S)

    async def get_page(self, path: str, params: dict[str, str]) -> tuple[list[Any], str | None]:
        """One page of a REST list (``params`` its query): its ``data`` and ``next_cursor``
        (None on the last), bounded, refused and checked as :meth:`get` is. The caller bounds
        how many pages it follows."""
        answer = await self._answer("GET", path, None, BUNDLE_DEADLINE_S, params)
        data, cursor = answer.get("data"), answer.get("next_cursor")
        if not isinstance(data, list) or not (cursor is None or isinstance(cursor, str)):
            raise HubUnreachable(f"{self._config.hub} answered {path} with no list", sent=True)
        return data, cursor or None

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """``data`` of a REST answer; :class:`HubRefused` (one line, the hub's message) for a
        4xx, :class:`HubUnreachable` for anything else that is not the hub's JSON."""
        return await self._rest(
            "POST", path, json.dumps(body).encode(), self._config.call_timeout_s
        )

    async def _rest(
        self, method: str, path: str, body: bytes | None, deadline_s: float
    ) -> dict[str, Any]:
        data = (await self._answer(method, path, body, deadline_s)).get("data")
        if not isinstance(data, dict):
            raise HubUnreachable(f"{self._config.hub} answered {path} with HTTP 200", sent=True)
        return data

    async def _answer(
        self,
        method: str,
        path: str,
        body: bytes | None,
        deadline_s: float,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The whole JSON object of a 200; a 4xx is :class:`HubRefused`, anything else that
        is not the hub's JSON :class:`HubUnreachable`."""
        headers = {"accept": "application/json"}
        if body is not None:
            headers["content-type"] = "application/json"
        response, raw = await self._exchange(
            method,
            path,
            headers=headers,
            body=body,
            deadline_s=deadline_s,
            max_bytes=MAX_ANSWER_BYTES,
            params=params,
        )
        if not _is_json(response):
            raise HubUnreachable(f"{self._config.hub} answered {path} with no JSON", sent=True)
        try:
            answer = _strict(raw)
        except ValueError:
            raise HubUnreachable(
                f"{self._config.hub} answered {path} with malformed JSON", sent=True
            ) from None
        if not isinstance(answer, dict):
            raise HubUnreachable(
                f"{self._config.hub} answered {path} with no JSON object", sent=True
            )
        if 400 <= response.status_code < 500:
            found = answer.get("error")
            error: dict[str, Any] = found if isinstance(found, dict) else {}
            message = str(error.get("message") or "refused")[:300]
            fields = {k: v for k, v in error.items() if k not in ("code", "message", "request_id")}
            raise HubRefused(
                response.status_code,
                f"{message} (HTTP {response.status_code})",
                retry_after_s=_retry_after(response, error),
                fields=fields,
            )
        if response.status_code != 200:
            raise HubUnreachable(
                f"{self._config.hub} answered {path} with HTTP {response.status_code}", sent=True
            )
        return answer
