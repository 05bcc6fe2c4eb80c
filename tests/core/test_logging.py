"""Log redaction of live secrets, and the JSON line format."""

from __future__ import annotations

import json
import logging

import pytest

from hub.core.logging import JsonFormatter, bind_context, install_log_redaction, redacting


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


def test_json_formatter_includes_request_context() -> None:
    bind_context(request_id="req-123456789")
    record = logging.LogRecord("hub.t", logging.INFO, __file__, 1, "hello %s", ("world",), None)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "hello world"
    assert line["request_id"] == "req-123456789"
    assert line["level"] == "info"
