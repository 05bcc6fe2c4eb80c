"""Structured JSON logs to stderr, with the request context and live-secret redaction (DESIGN §11).

The standard library's logging with a small JSON formatter: the record's own fields plus the
request id, client address, tenant and principal bound in context variables by the request
middleware and the authentication dependency. :func:`redacting` registers a secret for the duration
of the code that uses it; :class:`RedactingFilter` (installed on the handler) replaces every
registered secret in a record's rendered message and arguments with ``[redacted]``, so a library
that logs a header value cannot leak it. ``httpx2``/``httpcore2`` loggers stay at WARNING: httpx2
logs every URL at INFO. uvicorn's access line keeps a query's parameter names and never their
values (:class:`QueryValuesFilter`): the OAuth callback's ``code`` and ``state`` arrive there.
Lines are formatted where they are logged and written by a thread of their own, so a reader that
stops reading stderr never stalls the event loop (:mod:`hub.core.log_writer`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from hub.core.log_writer import LineWriter, QueuedLineHandler

__all__ = [
    "QueryValuesFilter",
    "RedactingFilter",
    "bind_context",
    "configure_logging",
    "current_client_request_id",
    "current_request_id",
    "install_log_redaction",
    "log_context",
    "redact",
    "redacting",
]

_request_id: ContextVar[str | None] = ContextVar("hub_request_id", default=None)
_tenant_id: ContextVar[str | None] = ContextVar("hub_tenant_id", default=None)
_principal_id: ContextVar[str | None] = ContextVar("hub_principal_id", default=None)
_client_request_id: ContextVar[str | None] = ContextVar("hub_client_request_id", default=None)
_client: ContextVar[str | None] = ContextVar("hub_client", default=None)

_QUIET_LOGGERS = (
    "httpx2",
    "httpcore2",
    "httpx",
    "httpcore",
    "hpack",
    "aiosqlite",
    "asyncio",
    "alembic.runtime.plugins",  # a line per plugin whenever alembic is first used
)
REDACTED = "[redacted]"

_live_secrets: Counter[str] = Counter()
_live_lock = threading.Lock()


def current_request_id() -> str | None:
    return _request_id.get()


def current_client_request_id() -> str | None:
    """The id the client sent in ``x-request-id`` (kept for correlation, never as the hub's)."""
    return _client_request_id.get()


def log_context() -> dict[str, str]:
    ctx = {
        "request_id": _request_id.get(),
        "tenant_id": _tenant_id.get(),
        "principal_id": _principal_id.get(),
        "client_request_id": _client_request_id.get(),
        "client": _client.get(),
    }
    return {k: v for k, v in ctx.items() if v}


def bind_context(
    *,
    request_id: str | None = None,
    tenant_id: str | None = None,
    principal_id: str | None = None,
    client_request_id: str | None = None,
    client: str | None = None,
) -> None:
    """Bind request context for every later log line of the current task.

    A new ``request_id`` starts a request: its client request id and client address (the peer, or
    the forwarded client when the peer is a trusted proxy) are set along with it."""
    if request_id is not None:
        _request_id.set(request_id)
        _client_request_id.set(client_request_id)
        _client.set(client)
    if tenant_id is not None:
        _tenant_id.set(tenant_id)
    if principal_id is not None:
        _principal_id.set(principal_id)


@contextlib.contextmanager
def redacting(*secrets: str) -> Iterator[None]:
    """Register secrets (at least 4 characters) as live while the block runs; logs redact them."""
    values = [s for s in secrets if s and len(s) >= 4]
    with _live_lock:
        _live_secrets.update(values)
    try:
        yield
    finally:
        with _live_lock:
            _live_secrets.subtract(values)
            for value in values:
                if _live_secrets[value] <= 0:
                    del _live_secrets[value]


def redact(text: str) -> str:
    """Replace every live secret in ``text``."""
    with _live_lock:
        live = list(_live_secrets)
    for secret in live:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


_TRACEBACKS = logging.Formatter()


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a broken format string must not break logging
        message = str(record.msg)
    record.msg = redact(message)
    record.args = None
    if record.exc_info and record.exc_info[0] is not None:
        # a traceback's text (the exception's message, its causes) can hold a secret too: every
        # formatter uses ``exc_text`` once it is set, so it is rendered and redacted here
        record.exc_text = redact(_TRACEBACKS.formatException(record.exc_info))


def install_log_redaction() -> None:
    """Redact live secrets in every log record as it is created, whatever handler receives it.

    A record factory (not a handler filter) so that records of third-party loggers reaching any
    handler (pytest's caplog included) are covered. Idempotent; costs one emptiness check per record
    while no secret is live.
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "_hub_redacting", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _live_secrets:
            _redact_record(record)
        return record

    factory._hub_redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


class RedactingFilter(logging.Filter):
    """Render the message once, redact live secrets in it, and drop the raw arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _live_secrets:
            _redact_record(record)
        return True


_REQUEST_LINE = re.compile(r'"([A-Z]+) ([^ ?]*)\?(\S*) HTTP/')  # a request target has no space
_PARAMETER_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def _names_only(query: str) -> str:
    """``a=1&b=2`` as ``a=[redacted]&b=[redacted]``; a part that is not ``name=value`` with a
    plain name is dropped whole, as it may be a value itself."""
    parts = []
    for part in query.split("&"):
        name, equals, _value = part.partition("=")
        parts.append(
            f"{name}={REDACTED}" if equals and _PARAMETER_NAME.fullmatch(name) else REDACTED
        )
    return "&".join(parts)


class QueryValuesFilter(logging.Filter):
    """On ``uvicorn.access``: the request line's query keeps its parameter names, not their values.

    uvicorn logs the path with the raw query string, and the authorization server sends the
    browser back to ``/oauth/callback?code=…&state=…``: a live authorization code and the state
    that binds it would sit in every log store the hub's lines reach. No route of the hub takes a
    secret in its query, but a client can send one anywhere, so every value goes, not a list of
    known names. A line with no query is left as uvicorn made it."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple):
            if not any(isinstance(arg, str) and "?" in arg for arg in args):
                return True
        elif "?" not in str(record.msg):
            return True
        message = _REQUEST_LINE.sub(
            lambda m: f'"{m[1]} {m[2]}?{_names_only(m[3])} HTTP/', record.getMessage()
        )
        record.msg = message
        record.args = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request context, extras."""

    _RESERVED = frozenset(logging.makeLogRecord({}).__dict__) | {
        "message",
        "asctime",
        "color_message",  # uvicorn's ANSI-coloured duplicate of the message
    }

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        payload.update(log_context())
        for key, value in record.__dict__.items():
            if key not in self._RESERVED and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, default=str)


_writers: list[LineWriter] = []


def configure_logging(level: str = "INFO") -> None:
    """Send JSON lines to stderr, written by a thread of their own (:mod:`hub.core.log_writer`);
    idempotent: replaces the handler it installed before, and keeps the process's one writer."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_hub_handler", False):
            root.removeHandler(handler)
    if not _writers:
        _writers.append(LineWriter(sys.stderr))
    handler = QueuedLineHandler(_writers[0])
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactingFilter())
    handler._hub_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    install_log_redaction()
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, QueryValuesFilter) for f in access.filters):
        access.addFilter(QueryValuesFilter())
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
