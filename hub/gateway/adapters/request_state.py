"""The sealed ``requestState`` of the 2026 approval path (DESIGN §10.3, §15).

A 2026-07-28 agent whose client declares URL-mode elicitation is answered, for a call waiting
for a person, with an ``input_required`` result: a URL elicitation to the approval's page and a
``requestState`` its client echoes, unread, on the retry (MCP-PROTOCOL §1a). The state is
AES-256-GCM under the keyring's active key; its associated data is ``mcphub/requestState/v1`` ‖
tenant ‖ deployment ‖ agent (three 16-byte ids: fixed width, so the encoding is injective), so a
state opens only for the agent and deployment it was given to. Inside: the approval's id, the
call's arguments sha256, the tool sha256 the approval is bound to, and the approval's expiry.

The state selects; it grants nothing. What opens is a
:class:`~hub.gateway.engine.ports.StateSelection` the approval port compares with the call's own
binding; whatever does not open — another agent's or deployment's state, a key that left the
keyring, an expired one, a changed byte, text that is not a state at all — is ``None``: the
retry is a new call (DESIGN §15). Nothing about why is told to the caller.

Written by hand: a few lines over :class:`~hub.core.crypto.Keyring`; no library seals MCP
request state.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from hub.core.crypto import CredentialUnavailable, Keyring, Sealed
from hub.gateway.engine.ports import StateSelection

__all__ = ["MAX_STATE_CHARS", "RequestStates"]

AAD_PREFIX: Final = b"mcphub/requestState/v1"
VERSION: Final = "v1"
#: a state is about 310 characters; anything much longer is not one of ours and is not decoded
MAX_STATE_CHARS: Final = 1024
_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """The bytes of ``text``, which must be their one canonical encoding: base64 ignores the
    unused bits of a last character, and a state that reads as another must not open."""
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


@dataclass(slots=True)
class RequestStates:
    """Seals and opens the states of one agent's calls to one deployment of one tenant (one is
    made per request of the endpoint: a plain slotted class, cheap to make and never used by
    most requests)."""

    keyring: Keyring
    tenant_id: uuid.UUID
    deployment_id: uuid.UUID
    agent_id: uuid.UUID

    @property
    def _aad(self) -> bytes:
        return b"".join(
            (AAD_PREFIX, self.tenant_id.bytes, self.deployment_id.bytes, self.agent_id.bytes)
        )

    def seal(self, selection: StateSelection, expires_at: datetime) -> str:
        plain = json.dumps(
            {
                "a": str(selection.approval_id),
                "s": selection.arguments_sha256,
                "t": selection.tool_sha256,
                "e": int(expires_at.timestamp()),
            },
            separators=(",", ":"),
        )
        sealed = self.keyring.encrypt(plain, self._aad)
        return ".".join((VERSION, sealed.key_id, _b64(sealed.nonce), _b64(sealed.ciphertext)))

    def open(self, state: object, now: datetime) -> StateSelection | None:
        """What ``state`` selects, or None when it is not a live state of this agent's."""
        if not isinstance(state, str) or len(state) > MAX_STATE_CHARS:
            return None
        parts = state.split(".")
        if len(parts) != 4 or parts[0] != VERSION:
            return None
        try:
            sealed = Sealed(parts[1], _unb64(parts[2]), _unb64(parts[3]))
            content = json.loads(self.keyring.decrypt(sealed, self._aad))
        except (CredentialUnavailable, binascii.Error, ValueError):
            return None
        return _selection(content, now)


def _selection(content: object, now: datetime) -> StateSelection | None:
    """The selection a well-formed, unexpired plaintext names (it is ours, but checked anyway)."""
    if not isinstance(content, dict):
        return None
    approval, arguments, tool, expiry = (content.get(k) for k in ("a", "s", "t", "e"))
    if not (isinstance(approval, str) and isinstance(arguments, str) and isinstance(tool, str)):
        return None
    if not (_SHA256.fullmatch(arguments) and _SHA256.fullmatch(tool)):
        return None
    if not isinstance(expiry, int) or isinstance(expiry, bool):
        return None
    if expiry <= now.timestamp():
        return None
    try:
        approval_id = uuid.UUID(approval)
    except ValueError:
        return None
    return StateSelection(approval_id, arguments, tool)
