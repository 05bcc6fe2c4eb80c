"""Console sessions: an API key exchanged for a server-side session (DESIGN §14, §15).

Signing in authenticates the key exactly as a request would (:func:`hub.auth.service.authenticate`)
and stores a new row holding only the SHA-256 of a random token; the browser keeps the token in
its cookie. Opening a session deletes the one the browser presented (rotation: a token set before
sign-in never becomes a signed-in one). Every console request reads the row, expires it when it was
not seen for ``HUB_CONSOLE_IDLE_S``, and admits its key again (:func:`admit_key_row`: revoked,
expired or disabled → the session ends). Revoking a key deletes its sessions
(:func:`end_sessions_of_key`, called by key revocation).

The CSRF token of a session is derived from its token (HMAC with a fixed label), so it is never
stored and never valid for another session.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from hub.auth import repository
from hub.auth.caller import Caller
from hub.auth.key_format import ParsedKey
from hub.auth.service import admit_key_row, authenticate
from hub.core import clock
from hub.core.db import preliminary_reads
from hub.core.errors import Unauthorized

__all__ = [
    "ConsoleLogin",
    "csrf_of",
    "end_session",
    "end_sessions_of_key",
    "new_token",
    "open_session",
    "resume_session",
]

SEEN_INTERVAL = timedelta(seconds=60)
_CSRF_LABEL = b"hub/console/csrf/v1"


@dataclass(frozen=True)
class ConsoleLogin:
    token: str
    caller: Caller

    def __repr__(self) -> str:  # the token is the session's secret
        return f"ConsoleLogin(caller={self.caller!r})"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_of(token: str) -> str:
    """The CSRF token of the session (or pre-session) whose token is ``token``."""
    return hmac.new(token.encode(), _CSRF_LABEL, hashlib.sha256).hexdigest()


async def open_session(
    session: AsyncSession,
    pepper: bytes,
    key: ParsedKey,
    request_id: str,
    previous_token: str | None,
    idle_s: float,
) -> ConsoleLogin:
    """Authenticate ``key`` (401 as the API would) and open a new session for it; the key's
    idle sessions, which no request will present again, are deleted on the way."""
    caller = await authenticate(session, pepper, key, request_id)
    if previous_token:
        await repository.delete_console_session(session, _hash(previous_token))
    await repository.delete_idle_console_sessions(
        session, caller.api_key_id, clock.now() - timedelta(seconds=idle_s)
    )
    token = new_token()
    await repository.insert_console_session(
        session,
        tenant_id=caller.tenant_id.value if caller.tenant_id else None,
        principal_id=caller.principal_id,
        api_key_id=caller.api_key_id,
        token_hash=_hash(token),
        now=clock.now(),
    )
    return ConsoleLogin(token, caller)


async def resume_session(
    session: AsyncSession, token: str, idle_s: float, request_id: str
) -> Caller | None:
    """The caller of the live session ``token``, or None (unknown, idle, or its key is no longer
    good: the row is then deleted)."""
    digest = _hash(token)
    now = clock.now()
    async with preliminary_reads(session):
        row = await repository.find_console_session(session, digest)
        if row is None:
            return None
        if row.last_seen_at <= now - timedelta(seconds=idle_s):
            await repository.delete_console_session(session, digest)
            return None
    try:
        caller = await admit_key_row(session, row.api_key_id, request_id)
    except Unauthorized:
        async with preliminary_reads(session):
            await repository.delete_console_sessions_of_key(session, row.api_key_id)
        return None
    async with preliminary_reads(session):
        await repository.touch_console_session(session, row.id, now, SEEN_INTERVAL)
    return caller


async def end_session(session: AsyncSession, token: str) -> None:
    """Sign out: the row is deleted (the cookie alone is then worthless)."""
    await repository.delete_console_session(session, _hash(token))


async def end_sessions_of_key(session: AsyncSession, api_key_id: uuid.UUID) -> int:
    """Delete every console session opened with the key (its revocation)."""
    return await repository.delete_console_sessions_of_key(session, api_key_id)
