"""Log redaction of live secrets, and the JSON line format."""

from __future__ import annotations

import json
import logging

import pytest

from hub.core.logging import (
    JsonFormatter,
    QueryValuesFilter,
    bind_context,
    install_log_redaction,
    redacting,
)


def test_live_secret_is_redacted_for_any_handler(caplog: pytest.LogCaptureFixture) -> None:
    install_log_redaction()
    secret = "CANARY-log-redaction-1234"
    caplog.set_level(logging.DEBUG)
    with redacting(secret):
        logging.getLogger("httpcore2.test").debug("header value %s seen", secret)
        logging.getLogger("hub.x").info(f"inline {secret}")
    logging.getLogger("hub.x").info("after %s", "scope")
    assert secret not in caplog.text
    assert caplog.text.count("[redacted]") == 2
    assert "after scope" in caplog.text


def test_a_live_secret_in_a_logged_traceback_is_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exception's text (and its cause's) reaches a handler redacted, whatever formats it."""
    install_log_redaction()
    secret = "CANARY-log-traceback-5678"
    caplog.set_level(logging.DEBUG)
    with redacting(secret):
        try:
            try:
                raise ValueError(f"the cause holds {secret}")
            except ValueError as cause:
                raise RuntimeError(f"while sending {secret}") from cause
        except RuntimeError:
            logging.getLogger("hub.x").warning("call failed", exc_info=True)
    assert secret not in caplog.text
    assert "RuntimeError: while sending [redacted]" in caplog.text
    assert "ValueError: the cause holds [redacted]" in caplog.text


def test_json_formatter_includes_request_context() -> None:
    bind_context(request_id="req-123456789")
    record = logging.LogRecord("hub.t", logging.INFO, __file__, 1, "hello %s", ("world",), None)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "hello world"
    assert line["request_id"] == "req-123456789"
    assert line["level"] == "info"


def _access_record(target: str) -> logging.LogRecord:
    """The record uvicorn's access logger makes (its format and arguments)."""
    args = ("127.0.0.1:5000", "GET", target, "1.1", 200)
    return logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None
    )


@pytest.mark.parametrize(
    ("target", "logged"),
    [
        pytest.param(
            "/oauth/callback?code=CANARY-code-1&state=CANARY-state-2",
            "/oauth/callback?code=[redacted]&state=[redacted]",
            id="oauth-callback",
        ),
        pytest.param("/x?CANARY-bare-3", "/x?[redacted]", id="a-value-alone"),
        pytest.param(
            '/x?a"b=CANARY-4&=CANARY-5&limit=',
            "/x?[redacted]&[redacted]&limit=[redacted]",
            id="odd-names",
        ),
        pytest.param("/x?q=CANARY-6?more=CANARY-7", "/x?q=[redacted]", id="a-second-question-mark"),
    ],
)
def test_the_access_line_keeps_query_names_not_values(target: str, logged: str) -> None:
    record = _access_record(target)
    assert QueryValuesFilter().filter(record)
    message = record.getMessage()
    assert "CANARY" not in message
    assert message == f'127.0.0.1:5000 - "GET {logged} HTTP/1.1" 200'


def test_an_access_line_without_a_query_is_left_as_made() -> None:
    record = _access_record("/tenants/acme/servers/linear")
    args = record.args
    assert QueryValuesFilter().filter(record)
    assert record.args is args


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_the_access_filter_also_reads_a_line_already_redacted() -> None:
    """A live secret makes the record factory render the message first (no arguments left).
    Kept by a handler on ``uvicorn.access`` itself: a server started with ``access_log=False``
    earlier in the process stops that logger's lines from reaching the root."""
    install_log_redaction()
    access = logging.getLogger("uvicorn.access")
    kept, level, only_names = _Kept(), access.level, QueryValuesFilter()
    access.addHandler(kept)
    access.addFilter(only_names)  # as configure_logging does (tests/deploy/test_access_log.py)
    access.setLevel(logging.INFO)
    try:
        with redacting("CANARY-live-8"):
            access.info(
                '%s - "%s %s HTTP/%s" %d',
                "127.0.0.1:5000",
                "GET",
                "/oauth/callback?code=CANARY-live-8&state=CANARY-state-9",
                "1.1",
                400,
            )
    finally:
        access.removeHandler(kept)
        access.removeFilter(only_names)
        access.setLevel(level)
    assert kept.messages == [
        '127.0.0.1:5000 - "GET /oauth/callback?code=[redacted]&state=[redacted] HTTP/1.1" 400'
    ]
