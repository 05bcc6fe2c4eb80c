"""A request's URL-mode elicitation round, read off the MCP wire (DESIGN §10.3, §15).

A 2026-07-28 ``tools/call`` whose ``_meta`` client capabilities declare ``elicitation.url`` comes
from a client that can send its person to a page; its retry echoes the ``requestState`` it was
given and answers the hub's one input request (``inputResponses["approval"]``). What the hub does
with such a round is :mod:`hub.gateway.elicitation`'s; this module only reads it, for the hub's
endpoint and the sidecar alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_types import CLIENT_CAPABILITIES_META_KEY

__all__ = ["APPROVAL_INPUT", "ElicitRound", "round_of", "url_round"]

#: the key of the hub's one input request (and of the client's response to it)
APPROVAL_INPUT: Final = "approval"
_DECLINED: Final = frozenset({"decline", "cancel"})


@dataclass(frozen=True)
class ElicitRound:
    """One request of a client that can be sent to a page: its ``requestState`` as sent
    (anything, or None), and whether its person declined or cancelled the last elicitation."""

    request_state: object
    declined: bool


def _object(value: object, key: str) -> dict[str, Any] | None:
    # ``dict``, not ``Mapping``: parsed JSON, and an ABC's isinstance costs every call
    if not isinstance(value, dict):
        return None
    found = value.get(key)
    return found if isinstance(found, dict) else None


def url_round(params: Mapping[str, Any]) -> ElicitRound | None:
    """The round of a request that declares URL-mode elicitation, else None (the classic path)."""
    capabilities = _object(params.get("_meta"), CLIENT_CAPABILITIES_META_KEY)
    if _object(_object(capabilities, "elicitation"), "url") is None:
        return None
    return round_of(params.get("requestState"), params.get("inputResponses"))


def round_of(request_state: object, input_responses: object) -> ElicitRound:
    """The round of a call known to come from a client that can be sent to a page."""
    response = _object(input_responses, APPROVAL_INPUT)
    declined = response is not None and response.get("action") in _DECLINED
    return ElicitRound(request_state, declined)
