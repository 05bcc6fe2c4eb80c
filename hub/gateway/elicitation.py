"""The 2026 approval path through URL-mode elicitation (DESIGN §10.3, §15).

A 2026-07-28 request whose ``_meta`` client capabilities declare ``elicitation.url`` is a client
that can send its person to a page. For such a client an ``ask`` call that is left pending is
answered with an ``InputRequiredResult`` (SEP-2322) instead of the ``approval_pending`` error
result: one URL elicitation (``inputRequests["approval"]``) to the approval's console page, and a
sealed ``requestState`` (:mod:`hub.gateway.adapters.request_state`). The client shows the page,
its person decides there (or has someone decide), and the client retries the same call with
``inputResponses`` and the state echoed.

How each request is answered (the state selects, the call's binding decides):

- A first call (no state, or one that does not open for this agent, deployment and call): the
  approval is found or made and the answer is given at once, so the page is shown at once.
- A retry whose state selects this very call's approval, with the elicitation accepted: it
  waits for a decision up to ``HUB_APPROVAL_WAIT_S``; approved → the call runs and its result
  is the answer; still pending → a fresh ``input_required``.
- A retry whose elicitation the person declined or cancelled: the call is answered at once as a
  client without the capability would be, with the ``approval_pending`` error result (the model
  learns the approval id and when it expires), so a person who will not go to the page is not
  asked again and again; an approval given meanwhile is still used, as it would be by any
  repeat of the same call.
- Denied → JSON-RPC ``40300`` ``approval_denied``, as for every client.
"""

from __future__ import annotations

from hub.core import clock
from hub.gateway.adapters.request_state import RequestStates
from hub.gateway.engine.engine import CallOutcome
from hub.gateway.engine.ports import CLASSIC_ASK, ApprovalOutcome, AskMode, StateSelection
from hub.gateway.engine.shaping import APPROVAL_META
from hub.mcp.elicitation import APPROVAL_INPUT, ElicitRound
from hub.mcp.server.answers import InputRequired

__all__ = ["ask_mode", "elicited", "input_required"]


def ask_mode(elicit: ElicitRound | None, states: RequestStates | None) -> AskMode:
    """How long the call of this round waits for a decision (see the module's docstring)."""
    if elicit is None or states is None:
        return CLASSIC_ASK
    if elicit.declined:
        return AskMode(wait="never")
    return AskMode("selected", states.open(elicit.request_state, clock.now()))


def elicited(
    outcome: CallOutcome,
    elicit: ElicitRound | None,
    wire_name: str,
    states: RequestStates | None,
) -> InputRequired | None:
    """The ``input_required`` answer for a call left pending, when the client takes one."""
    pending = outcome.pending
    if elicit is None or elicit.declined or states is None or pending is None:
        return None
    if (
        pending.approval_id is None
        or pending.expires_at is None
        or pending.arguments_sha256 is None
        or pending.tool_sha256 is None
    ):
        return None
    selection = StateSelection(pending.approval_id, pending.arguments_sha256, pending.tool_sha256)
    return input_required(pending, wire_name, states.seal(selection, pending.expires_at))


def input_required(pending: ApprovalOutcome, wire_name: str, state: str) -> InputRequired:
    """The answer for a call left pending: a URL elicitation to where it is decided."""
    expires = pending.expires_at.isoformat() if pending.expires_at else None
    message = (
        f"A person must approve this call of {wire_name} before it runs. Open the page to see "
        f"the call and decide (approval {pending.approval_id}"
        + (f", open until {expires}" if expires else "")
        + "). Once it is approved, accept here and the call runs."
    )
    params = {"mode": "url", "message": message, "url": pending.url or ""}
    request = {"method": "elicitation/create", "params": params}
    meta = {
        APPROVAL_META: {
            "id": str(pending.approval_id),
            "status": "pending",
            "url": pending.url,
            "expires_at": expires,
        }
    }
    return InputRequired({APPROVAL_INPUT: request}, state, meta)
