"""Direct mode's decision ids (DESIGN §15): what the hub decided about one call, sealed.

A decision id is AES-GCM under the keyring, AAD ``mcphub/decision/v1`` ‖ tenant ‖ deployment ‖
agent, over the call's audit fields and an expiry (``DECISION_S``): good only for its own
deployment, agent and call, and only in one spelling (canonical unpadded base64url), since the
outcome's claim is keyed by it (:mod:`hub.gateway.adapters.outcomes`).
"""

from __future__ import annotations

import base64
import json
import uuid
from datetime import timedelta

from hub.core import clock
from hub.core.crypto import Keyring, Sealed
from hub.gateway.engine.ports import CallRecord

__all__ = ["DECISION_S", "open_decision", "seal_decision"]

DECISION_S = 600
_AAD = b"mcphub/decision/v1"


def _aad(tenant_id: uuid.UUID, deployment_id: uuid.UUID, agent_id: uuid.UUID) -> bytes:
    return b"|".join(
        [_AAD, str(tenant_id).encode(), str(deployment_id).encode(), str(agent_id).encode()]
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal_decision(keyring: Keyring, record: CallRecord, tenant_id: uuid.UUID) -> str:
    fields = {
        "w": record.wire_name,
        "g": record.grant_key,
        "d": record.decision,
        "r": list(record.reasons),
        "a": str(record.approval_id) if record.approval_id else None,
        "s": record.arguments_sha256,
        "t": record.tool_sha256,
        "c": record.catalog_version,
        "v": record.grants_version,
        "x": (clock.now() + timedelta(seconds=DECISION_S)).timestamp(),
    }
    sealed = keyring.encrypt(
        json.dumps(fields), _aad(tenant_id, record.deployment_id, record.agent_id)
    )
    return f"{sealed.key_id}.{_b64(sealed.nonce)}.{_b64(sealed.ciphertext)}"


def open_decision(
    keyring: Keyring,
    token: str,
    tenant_id: uuid.UUID,
    deployment_id: uuid.UUID,
    agent_id: uuid.UUID,
) -> CallRecord | None:
    try:
        key_id, nonce, ciphertext = token.split(".")
        if _b64(_unb64(nonce)) != nonce or _b64(_unb64(ciphertext)) != ciphertext:
            return None  # one spelling per id: the outcome's claim is keyed by it
        sealed = Sealed(key_id=key_id, nonce=_unb64(nonce), ciphertext=_unb64(ciphertext))
        fields = json.loads(keyring.decrypt(sealed, _aad(tenant_id, deployment_id, agent_id)))
    except Exception:  # any malformed, foreign or tampered id reads the same
        return None
    if float(fields["x"]) < clock.now().timestamp():
        return None
    record = CallRecord(deployment_id, agent_id, str(fields["w"]))
    record.extra = {"expires_at": float(fields["x"])}
    record.grant_key, record.decision = fields["g"], fields["d"]
    record.reasons = tuple(fields["r"])
    record.approval_id = uuid.UUID(fields["a"]) if fields["a"] else None
    record.arguments_sha256, record.tool_sha256 = fields["s"], fields["t"]
    record.catalog_version, record.grants_version = fields["c"], fields["v"]
    return record
