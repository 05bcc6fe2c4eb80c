"""What an operation hands back: whole bodies, streamed bodies and SSE events, all capped.

Body bytes are counted **decoded**, as they stream: the client asks for ``identity`` but a server
may compress anyway, and httpx2 inflates in bounded pieces (at most 1 MiB per step), so a small
gzip bomb is stopped a piece past the cap instead of being inflated in memory. Caps:

- a non-SSE body (:meth:`StreamedResponse.read`): ``max_response_bytes``; a ``Content-Length``
  over the cap is refused before any body byte is read;
- each SSE event (:meth:`StreamedResponse.events`): ``max_response_bytes``, enforced by httpx2's
  ``EventSource(max_event_size=…)`` — it also bounds a line that never ends;
- everything (both kinds, every request of the operation): the operation's :class:`ByteBudget`.

The response is closed the moment a cap is passed, or when the caller leaves the ``stream`` block
(for example after breaking out of ``events()``). Reprs never show bodies or headers: an upstream
may echo the caller's secret back.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2

from hub.core import portable_json
from hub.egress.errors import (
    ConnectFailed,
    EgressError,
    EgressTimeout,
    InvalidJson,
    MalformedResponse,
    ResponseTooLarge,
)
from hub.egress.limits import ByteBudget

__all__ = [
    "EVENT_STREAM",
    "MAX_JSON_DEPTH",
    "EgressResponse",
    "ServerSentEvent",
    "StreamedResponse",
    "parse_json",
    "translate_httpx_error",
]

EVENT_STREAM = "text/event-stream"


def translate_httpx_error(exc: httpx2.HTTPError) -> EgressError:
    """The egress error for an httpx2 exception that escaped the transport's own translation."""
    if isinstance(exc, httpx2.DecodingError):
        return MalformedResponse()
    if isinstance(exc, httpx2.TimeoutException):
        return EgressTimeout()
    return ConnectFailed()


#: How deeply an upstream JSON document may nest objects and arrays. Real MCP answers stay far
#: below; deeper documents cannot be stored (PostgreSQL's JSONB and pydantic's serialiser have
#: their own limits) and are refused as malformed rather than failing later.
MAX_JSON_DEPTH = 128


def parse_json(raw: bytes | str) -> Any:
    """The JSON of an upstream body, or :class:`InvalidJson`, quoting nothing of the input.

    Strict (:mod:`hub.core.portable_json`): ``NaN``/``Infinity`` and numbers beyond a double are
    refused (PostgreSQL refuses them in JSONB, SQLite stores null under a hash computed over NaN,
    and canonical JSON cannot write them back), so are documents nested deeper than
    :data:`MAX_JSON_DEPTH`; a lone surrogate escape becomes U+FFFD (a JavaScript server that cuts a
    string inside a pair sends one, and the answer could not be written out as UTF-8 with it)."""
    try:
        return portable_json.loads(raw, max_depth=MAX_JSON_DEPTH, surrogates="replace")
    except portable_json.NotPortableJson:
        pass
    raise InvalidJson()  # outside the handler: nothing of the document rides on the traceback


def media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").partition(";")[0].strip().lower()


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One SSE event (WHATWG HTML §9.2): ``event`` defaults to ``message``."""

    event: str = "message"
    data: str = field(default="", repr=False)
    id: str = ""
    retry: int | None = None

    def json(self) -> Any:
        return parse_json(self.data)


@dataclass(frozen=True, slots=True)
class EgressResponse:
    """A whole response: status, case-insensitive headers, the capped body."""

    status_code: int
    headers: Mapping[str, str] = field(repr=False)
    content: bytes = field(repr=False)

    @property
    def content_type(self) -> str:
        """The media type, lowercased, without parameters."""
        return media_type(self.headers)

    def json(self) -> Any:
        return parse_json(self.content)


class _Feed(httpx2.AsyncByteStream):
    """Already-decoded, already-counted bytes, as the raw stream of a derived response."""

    def __init__(self, source: AsyncGenerator[bytes, None]) -> None:
        self._source = source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._source:
            yield chunk

    async def aclose(self) -> None:
        await self._source.aclose()


class StreamedResponse:
    """A response whose body has not been read yet: read it whole, or iterate its SSE events."""

    def __init__(self, response: httpx2.Response, *, budget: ByteBudget, max_bytes: int) -> None:
        self._response = response
        self._budget = budget
        self._max_bytes = max_bytes
        self._consumed = False
        self._content: bytes | None = None
        self._events: AsyncGenerator[ServerSentEvent, None] | None = None

    def __repr__(self) -> str:
        return f"<StreamedResponse status_code={self.status_code}>"

    @property
    def status_code(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def content_type(self) -> str:
        return media_type(self._response.headers)

    def _declared_length(self) -> int | None:
        value = self._response.headers.get("content-length")
        return int(value) if value is not None and value.strip().isdigit() else None

    def _claim(self) -> None:
        if self._consumed:
            raise RuntimeError("the response body was already consumed")
        self._consumed = True

    async def _decoded(self) -> AsyncGenerator[bytes, None]:
        """Decoded body chunks, each charged to the operation budget as it arrives."""
        async with contextlib.aclosing(self._response.aiter_bytes()) as chunks:
            iterator = chunks.__aiter__()
            while True:
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    return
                except httpx2.HTTPError as exc:
                    failure = translate_httpx_error(exc)
                else:
                    self._budget.charge(len(chunk))
                    yield chunk
                    continue
                raise failure

    async def read(self) -> bytes:
        """The whole body, at most ``max_response_bytes`` (decoded)."""
        if self._content is not None:
            return self._content
        self._claim()
        try:
            declared = self._declared_length()
            if declared is not None and declared > self._max_bytes:
                raise ResponseTooLarge("body")
            if declared is not None and declared > self._budget.remaining:
                raise ResponseTooLarge("operation")
            parts: list[bytes] = []
            total = 0
            async with contextlib.aclosing(self._decoded()) as chunks:
                async for chunk in chunks:
                    total += len(chunk)
                    if total > self._max_bytes:
                        raise ResponseTooLarge("body")
                    parts.append(chunk)
        except BaseException:
            await self.aclose()
            raise
        self._content = b"".join(parts)
        return self._content

    def events(self) -> AsyncIterator[ServerSentEvent]:
        """The SSE events of a ``text/event-stream`` body, each at most ``max_response_bytes``."""
        if self.content_type != EVENT_STREAM:
            raise MalformedResponse("upstream response is not an event stream")
        self._claim()
        self._events = self._iterate_events()
        return self._events

    async def _iterate_events(self) -> AsyncGenerator[ServerSentEvent, None]:
        feed = httpx2.Response(
            status_code=self._response.status_code,
            headers={"content-type": EVENT_STREAM},
            stream=_Feed(self._decoded()),
            request=self._response.request,
        )
        source = httpx2.EventSource(feed, max_event_size=self._max_bytes)
        try:
            parsed = cast(AsyncGenerator[httpx2.ServerSentEvent, None], source.__aiter__())
            async with contextlib.aclosing(parsed) as events:
                iterator = events.__aiter__()
                while True:
                    try:
                        sse = await iterator.__anext__()
                    except StopAsyncIteration:
                        return
                    except httpx2.SSEError:  # the content type is ours: only the size check fails
                        failure: EgressError = ResponseTooLarge("event")
                    except httpx2.HTTPError as exc:
                        failure = translate_httpx_error(exc)
                    else:
                        yield ServerSentEvent(sse.event, sse.data, sse.id, sse.retry)
                        continue
                    raise failure
        finally:
            await feed.aclose()
            await self._response.aclose()

    async def aclose(self) -> None:
        """Close the upstream response (and an unfinished event iteration); idempotent."""
        events, self._events = self._events, None
        if events is not None:
            await events.aclose()
        await self._response.aclose()
