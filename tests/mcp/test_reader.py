"""Unit tests: picking the answer out of a JSON body or an SSE stream (``mcp.client.reader``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hub.egress import ServerSentEvent
from hub.mcp import McpError
from hub.mcp.client.reader import Reply, answer_from_events, answer_from_json

ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}


def message(payload: Any, event: str = "message") -> ServerSentEvent:
    return ServerSentEvent(event=event, data=json.dumps(payload))


async def stream(*events: ServerSentEvent) -> AsyncIterator[ServerSentEvent]:
    for event in events:
        yield event


class Requests:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any]) -> None:
        self.seen.append(request)


async def test_the_answer_is_found_after_priming_notifications_and_other_ids() -> None:
    handler = Requests()
    events = stream(
        ServerSentEvent(data="", id="prime-0", retry=1000),
        ServerSentEvent(event="endpoint", data="/messages"),
        message({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
        message({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}),
        message({"jsonrpc": "2.0", "id": 6, "result": {"stale": True}}),
        message({"jsonrpc": "2.0", "id": "7", "result": {"string": "id"}}),
        message(ANSWER),
        message({"jsonrpc": "2.0", "id": 7, "result": {"after": "the answer"}}),
    )
    assert await answer_from_events(events, 7, handler) == ANSWER
    assert handler.seen == [{"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}]


async def test_server_requests_are_ignored_without_a_handler() -> None:
    events = stream(message({"jsonrpc": "2.0", "id": 1, "method": "ping"}), message(ANSWER))
    assert await answer_from_events(events, 7, None) == ANSWER


async def test_an_error_answer_and_a_null_id_error_count_as_the_answer() -> None:
    error = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "bad"}}
    assert await answer_from_events(stream(message(error)), 7, None) == error
    unreadable = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}}
    assert await answer_from_events(stream(message(unreadable)), 7, None) == unreadable


async def test_a_batch_in_one_event_is_read_message_by_message() -> None:
    batch = [{"jsonrpc": "2.0", "method": "notifications/message"}, ANSWER]
    assert await answer_from_events(stream(message(batch)), 7, None) == ANSWER


@pytest.mark.parametrize(
    "events",
    [
        [message({"jsonrpc": "2.0", "id": 6, "result": {}})],
        [],
        [ServerSentEvent(data="{not json")],
        [message({"id": 7, "result": {}})],
        [message({"jsonrpc": "2.0", "id": 7, "result": {}, "error": {}})],
        [message({"jsonrpc": "2.0", "id": 7})],
        [message({"jsonrpc": "2.0", "method": 5})],
        [message(["not", "messages"])],
    ],
    ids=[
        "ended-without-answer",
        "empty",
        "not-json",
        "no-jsonrpc",
        "result-and-error",
        "neither",
        "bad-method",
        "junk-batch",
    ],
)
async def test_broken_streams_are_protocol_errors(events: list[ServerSentEvent]) -> None:
    with pytest.raises(McpError) as caught:
        await answer_from_events(stream(*events), 7, None)
    assert caught.value.reason == "protocol_error"
    assert caught.value.__context__ is None


def test_a_json_body_answer_is_found_by_id() -> None:
    assert answer_from_json(ANSWER, 7, strict=True) == ANSWER
    assert answer_from_json([{"jsonrpc": "2.0", "method": "x"}, ANSWER], 7, strict=True) == ANSWER


@pytest.mark.parametrize(
    "payload",
    [{"jsonrpc": "2.0", "id": 8, "result": {}}, {"error": "plain"}, "text", 3, None],
)
def test_a_2xx_json_body_without_the_answer_is_a_protocol_error(payload: Any) -> None:
    with pytest.raises(McpError) as caught:
        answer_from_json(payload, 7, strict=True)
    assert caught.value.reason == "protocol_error"


def test_an_error_status_body_that_does_not_answer_is_just_no_answer() -> None:
    assert answer_from_json({"error": "missing header"}, 7, strict=False) is None
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "no"}}
    assert answer_from_json(refusal, 7, strict=False) == refusal


def test_reply_exposes_the_error_code_only_when_it_is_an_integer() -> None:
    reply = Reply(400, "json", answer={"jsonrpc": "2.0", "id": 1, "error": {"code": -32022}})
    assert reply.error_code == -32022
    assert not reply.ok
    odd = Reply(200, "json", answer={"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}})
    assert odd.error_code is None
    assert Reply(202, "none").error is None
