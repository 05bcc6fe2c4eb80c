"""Handshake-era sessions kept open between tool calls (MCP-PROTOCOL §3a; docs/decisions.md).

A handshake-era upstream costs every call that opens its own session three more requests:
``initialize``, ``notifications/initialized`` and the closing ``DELETE``. The gateway calls the
same server for the same agent again and again, so :class:`SessionKeeper` keeps each finished
session idle instead, and the next call resumes it with ``tools/call`` alone.

- **Who may resume a session.** A session is kept under a key derived from everything that
  authenticates or addresses it: the caller's ``partition`` (the gateway's deployment, agent and
  server), the URL, the pin, the egress scope, the bearer and the version offered. The key is an
  HMAC under a key of this process, so the keeper holds neither the bearer nor any URL, and a
  rotated or refreshed secret never resumes a session opened with the old one.
- **One call per session at a time.** :meth:`SessionKeeper.take` removes the session it hands out
  and :meth:`SessionKeeper.give` puts it back after a successful call; concurrent calls open
  sessions of their own. The request ids carry on from where the session left them, so no id is
  reused within a session.
- **Bounds.** At most ``per_key`` idle sessions per key (one given back beyond that is for the
  caller to ``DELETE`` at once) and at most ``keys`` keys, the least recently used key forgotten
  beyond that.
- **Idle expiry.** A session idle for ``idle_s`` or longer is never resumed: ``take`` hands it to
  the caller to ``DELETE`` (the caller holds the bearer that takes). Sessions whose key no call
  uses again are forgotten without a ``DELETE`` (the keeper does not hold the bearer it would
  need); servers expire idle sessions themselves (the SDK's default is 30 minutes).

- **Counted** (:attr:`SessionKeeper.events`, for the hub's metrics): sessions ``resumed``,
  ``kept`` (given back), ``surplus`` (refused, over ``per_key``), ``expired`` (handed out to be
  deleted), ``forgotten`` (dropped with their key, least recently used) and ``lost`` (resumed,
  but the server no longer knew them: noted by the client, which opened a new one).

Written here because no library keeps MCP sessions for a client that is not the SDK's: the
SDK's ``ClientSession`` holds one long-lived session per connection, with its own transport.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

__all__ = ["KeptSession", "SessionKeeper"]

PER_KEY = 8
KEYS = 512
#: what :attr:`SessionKeeper.events` counts (see the module docstring)
EVENTS = ("resumed", "kept", "surplus", "expired", "forgotten", "lost")


@dataclass
class KeptSession:
    """An established handshake session: its id (``None`` when the server issued none), the
    negotiated version, its request ids and when it was last given back."""

    session_id: str | None
    version: str
    ids: Iterator[int]
    idle_since: float = 0.0

    def __repr__(self) -> str:  # the session id is a bearer-like handle on the server's side
        return f"<KeptSession {self.version}>"


class SessionKeeper:
    """Idle handshake sessions by key (see the module docstring)."""

    def __init__(
        self,
        *,
        idle_s: float,
        per_key: int = PER_KEY,
        keys: int = KEYS,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[int, Mapping[str, int]], None] | None = None,
    ) -> None:
        """``on_change(idle_count, events)`` is called after every change (the hub's metrics)."""
        if idle_s <= 0 or per_key < 1 or keys < 1:
            raise ValueError("idle_s must be positive, per_key and keys at least 1")
        self.idle_s = idle_s
        self.per_key = per_key
        self.keys = keys
        self._clock = clock
        self._mac_key = os.urandom(32)
        self._idle: OrderedDict[bytes, list[KeptSession]] = OrderedDict()
        self.events: dict[str, int] = dict.fromkeys(EVENTS, 0)
        self._idle_total = 0  # sessions over every key (read on each change, for the metrics)
        self._on_change = on_change
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self.idle_count(), self.events)

    def __repr__(self) -> str:
        return f"<SessionKeeper keys={len(self._idle)} idle={self.idle_count()}>"

    def idle_count(self) -> int:
        return self._idle_total

    def key(
        self,
        partition: str,
        url: str,
        pin: str,
        scope: str | None,
        bearer: str | None,
        offer: str,
    ) -> bytes:
        """The key of the sessions these parameters may resume."""
        fields = json.dumps([partition, url, pin, scope, bearer, offer], separators=(",", ":"))
        return hmac.digest(self._mac_key, fields.encode(), hashlib.sha256)

    def take(self, key: bytes) -> tuple[KeptSession | None, list[KeptSession]]:
        """The most recently used live session of ``key`` (removed from the keeper), and the
        expired ones (removed too: the caller ``DELETE``s them)."""
        sessions = self._idle.get(key)
        if not sessions:
            return None, []
        now = self._clock()
        expired = [s for s in sessions if now - s.idle_since >= self.idle_s]
        live = [s for s in sessions if now - s.idle_since < self.idle_s]
        taken = live.pop() if live else None
        self._idle_total -= len(sessions) - len(live)
        self.events["resumed"] += taken is not None
        self.events["expired"] += len(expired)
        if live:
            self._idle[key] = live
            self._idle.move_to_end(key)
        else:
            del self._idle[key]
        self._changed()
        return taken, expired

    def give(self, key: bytes, session: KeptSession) -> bool:
        """Keep ``session`` idle under ``key``; False when the key already keeps ``per_key``
        (the caller ``DELETE``s it)."""
        sessions = self._idle.get(key)
        if sessions is None:
            while len(self._idle) >= self.keys:
                forgotten = len(self._idle.popitem(last=False)[1])
                self.events["forgotten"] += forgotten
                self._idle_total -= forgotten
            sessions = self._idle[key] = []
        elif len(sessions) >= self.per_key:
            self.events["surplus"] += 1
            self._changed()
            return False
        self._idle.move_to_end(key)
        session.idle_since = self._clock()
        sessions.append(session)
        self._idle_total += 1
        self.events["kept"] += 1
        self._changed()
        return True

    def lost(self) -> None:
        """Note a resumed session the server no longer knew (the client opened a new one)."""
        self.events["lost"] += 1
        self._changed()
