"""An ``ask`` call's approval page, shown to the agent's person through the sidecar (DESIGN §10.3).

The hub answers a pending ``ask`` call with ``input_required`` (a URL elicitation to the
approval's page and a sealed ``requestState``) when the call is in the 2026-07-28 era and its
``_meta`` declares URL-mode elicitation (``hub.gateway.elicitation``). Relay mode sends every
call in that era, so the sidecar decides what it declares:

- A 2026-07-28 client that declares ``elicitation.url`` on its own request: the sidecar declares
  it to the hub too, and passes the round through both ways untouched (the hub's
  ``input_required`` to the client; the client's ``requestState`` and ``inputResponses`` back to
  the hub). The state is the hub's, sealed and opened by the hub only.
- A client of the handshake eras that declared ``elicitation.url`` at ``initialize``, on a
  session that can take a request from the server (stdio, or ``--listen`` with its stream): it
  cannot take an ``input_required`` result, so the sidecar drives the round for it
  (:func:`through_the_page`). It sends the hub's elicitation to the client as an
  ``elicitation/create`` request on the session, sends the person's answer back with the
  state, and the hub waits up to ``HUB_APPROVAL_WAIT_S`` for the decision. If it is still
  pending, one more call that says ``cancel`` gets the hub's ``approval_pending`` result, which
  tells the model to repeat the call once it is approved. The person is sent to the page once
  per call, never in a loop.
- Any other client: nothing is declared, and a pending call is the ``approval_pending`` result.

Written here rather than taken from the SDK: the SDK's client drives ``input_required`` rounds
against a server, and its server seals states of its own; what is needed is the middle of the
two, a server that answers its client in the client's era while it is the hub's client.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import anyio
from mcp_types import ElicitResult

from hub.core import clock
from hub.gateway.engine.errors import error_result
from hub.gateway.engine.shaping import APPROVAL_META
from hub.mcp.elicitation import APPROVAL_INPUT, url_round

__all__ = [
    "INPUT_REQUIRED",
    "Asking",
    "Elicit",
    "asking_of",
    "bounded",
    "is_input_required",
    "through_the_page",
]

log = logging.getLogger("hub.sidecar")

INPUT_REQUIRED: Final = "input_required"
#: how long the person may take to answer the client's prompt when the approval names no expiry
DEFAULT_ELICIT_S: Final = 300.0
#: and the most it may take whatever the expiry says (the approval's pending TTL's default)
MAX_ELICIT_S: Final = 900.0
#: the longest ``requestState`` passed on to the decisions route (the hub's are ≤ 1,024)
MAX_STATE_CHARS: Final = 4096

# (message, url, elicitation id, seconds) -> the client's answer: "accept", "decline" or "cancel"
Elicit = Callable[[str, str, str, float], Awaitable[str]]


@dataclass(frozen=True)
class Asking:
    """A call that declares URL-mode elicitation to the hub, with the round's echo (or None)."""

    request_state: object = None
    input_responses: object = None

    def for_decision(self) -> dict[str, Any]:
        """The round as direct mode's ``POST …/decisions`` takes it (``url_elicitation``): a
        state that is not a string of a state's size, or responses that are not an object, are
        left out, and the hub treats the call as a first one, as its endpoint would."""
        state = self.request_state
        usable = isinstance(state, str) and len(state) <= MAX_STATE_CHARS
        responses = self.input_responses
        return {
            "request_state": state if usable else None,
            "input_responses": responses if isinstance(responses, dict) else None,
        }


FIRST_ROUND: Final = Asking()


def asking_of(params: Mapping[str, Any] | None) -> Asking | None:
    """The round a 2026-07-28 client's ``tools/call`` carries when it declares URL-mode
    elicitation, else None."""
    if params is None or url_round(params) is None:
        return None
    return Asking(params.get("requestState"), params.get("inputResponses"))


def is_input_required(result: Mapping[str, Any]) -> bool:
    return result.get("resultType") == INPUT_REQUIRED


def _answer(action: str) -> dict[str, Any]:
    return {APPROVAL_INPUT: {"action": action}}


def _page(result: Mapping[str, Any]) -> tuple[str, str, str, float] | None:
    """(message, url, approval id, seconds to answer) of the hub's one URL elicitation."""
    requests = result.get("inputRequests")
    request = requests.get(APPROVAL_INPUT) if isinstance(requests, dict) else None
    params = request.get("params") if isinstance(request, dict) else None
    meta = result.get("_meta")
    approval = meta.get(APPROVAL_META) if isinstance(meta, dict) else None
    if not isinstance(params, dict) or not isinstance(approval, dict):
        return None
    url, message, approval_id = params.get("url"), params.get("message"), approval.get("id")
    if not (isinstance(url, str) and url and isinstance(message, str)):
        return None
    if not isinstance(approval_id, str):
        return None
    return message, url, approval_id, _seconds_left(approval.get("expires_at"))


def _seconds_left(expires_at: object) -> float:
    if not isinstance(expires_at, str):
        return DEFAULT_ELICIT_S
    try:
        left = (datetime.fromisoformat(expires_at) - clock.now()).total_seconds()
    except (TypeError, ValueError):
        return DEFAULT_ELICIT_S
    return max(1.0, min(left, MAX_ELICIT_S)) if math.isfinite(left) else DEFAULT_ELICIT_S


def _still_asking(result: Mapping[str, Any]) -> dict[str, Any]:
    """An ``input_required`` the hub should not have sent after a ``cancel``: the call did not
    run, and the model is told so in the class it knows."""
    text = "approval_pending: a person must approve this call before it runs; repeat it later"
    return error_result("approval_pending", text)


async def through_the_page(
    call: Callable[[Asking], Awaitable[dict[str, Any]]], elicit: Elicit
) -> dict[str, Any]:
    """One ``tools/call`` of a handshake-era client that can be sent to a page.

    ``call`` relays the call with a round; ``elicit`` asks the client's person. Three relayed
    calls at most: the first; the retry with the person's answer (the hub waits for the
    decision); and, when the approval is still pending, a ``cancel`` that the hub answers at
    once with its ``approval_pending`` result.
    """
    result = await call(FIRST_ROUND)
    if not is_input_required(result):
        return result
    page = _page(result)
    action = "cancel"
    if page is not None:
        message, url, approval_id, seconds = page
        action = await elicit(message, url, approval_id, seconds)
    result = await call(Asking(result.get("requestState"), _answer(action)))
    if is_input_required(result):
        result = await call(Asking(result.get("requestState"), _answer("cancel")))
    return _still_asking(result) if is_input_required(result) else result


def elicit_result_action(result: ElicitResult | None) -> str:
    """The person's answer, ``cancel`` when there was none (timed out, refused, gone)."""
    if result is None or result.action not in ("accept", "decline", "cancel"):
        return "cancel"
    return result.action


async def bounded(ask: Awaitable[ElicitResult], seconds: float) -> str:
    """``ask`` within ``seconds``; an error or no answer in time counts as ``cancel``."""
    answer: ElicitResult | None = None
    try:
        with anyio.move_on_after(seconds):
            answer = await ask
    except Exception as exc:  # a client that cannot elicit: the call stays pending
        log.info("sidecar: the client did not take the approval page (%s)", type(exc).__name__)
    return elicit_result_action(answer)
