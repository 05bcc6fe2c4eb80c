"""The rate limiter of one replica: ``check(kind, key) -> Decision``.

Counting is the ``limits`` library's *moving window* (every hit is timestamped, so no window edge
lets a burst of twice the quota through, and a refused hit costs nothing). The storage is
``memory://`` (this replica alone) or Redis (``redis://``/``rediss://``: one budget shared by every
replica, the counters in Redis under ``key_prefix``).

**The storage down fails open** (a documented decision, docs/decisions.md): a Redis error or a
Redis call slower than ``timeout_s`` admits the request, counts
``hub_rate_limit_storage_errors_total`` and ``hub_rate_limit_fail_open_total{kind}``, and logs a
warning (once when it starts, then at most every ``warn_every_s``). For ``retry_s`` after a
failure the storage is not asked at all, so a dead Redis costs requests nothing; then it is tried
again, and its recovery is logged.

A Redis call past the bound is the storage down only once such timeouts span the bound itself
(a Redis that stays slow): a stall of this process's event loop (a heavy request, GC, a starved
host) times out every check waiting at that moment, all at once, and only those are admitted
unchecked; read as Redis down, it had admitted everything for ``retry_s`` after it. A refused
connection or a Redis error is down at once, as before.

``memory://`` has no time bound: it lives in this process and cannot be away. Bounded as Redis
is, a check that waited on the key's lock (the library's expiry sweep holds it across a thread
hop) while the event loop was busy elsewhere for longer than ``timeout_s`` read as the storage
down, and the replica admitted everything unchecked for ``retry_s``: load turned the limits off
exactly when they matter (the soak walk, stop 51). It waits as long as the loop makes it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter

from hub.core.metrics import Metrics
from hub.ratelimit.headers import policy_field, retry_after_field, state_field
from hub.ratelimit.policy import LimitKind, Policies

__all__ = ["Decision", "RateLimiter"]

log = logging.getLogger("hub.ratelimit")

DEFAULT_KEY_PREFIX = "hub-ratelimit"


@dataclass(frozen=True)
class Decision:
    """The answer for one request: admitted or not, and the headers to send either way.

    ``headers`` holds ``RateLimit-Policy`` and ``RateLimit`` (and ``Retry-After`` when refused);
    it is empty when the class is off or the storage failed (nothing true to advertise).
    """

    allowed: bool
    kind: str
    retry_after_s: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def admitted(cls, kind: str) -> Decision:
        return cls(True, kind)


def _storage(url: str, key_prefix: str, timeout_s: float) -> tuple[Storage, Any]:
    """The ``limits`` storage for ``url`` and, for Redis, the connection pool we own (to close)."""
    if url.startswith("memory://"):
        return MemoryStorage(), None
    import redis.asyncio as aioredis

    # Our own pool, so every socket operation is bounded and we can close it at shutdown.
    pool = aioredis.ConnectionPool.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
    )
    storage = RedisStorage(
        "async+" + url,
        implementation="redispy",
        key_prefix=key_prefix,
        wrap_exceptions=True,
        connection_pool=pool,  # type: ignore[arg-type]  # passed through to redis.asyncio.Redis
    )
    return storage, pool


class RateLimiter:
    """Checks requests against the replica's policies (a component, one per app)."""

    def __init__(
        self,
        policies: Policies,
        storage_url: str,
        metrics: Metrics,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        timeout_s: float = 0.5,
        retry_s: float = 5.0,
        warn_every_s: float = 30.0,
    ) -> None:
        self.policies = policies
        self.shared = not storage_url.startswith("memory://")
        self._metrics = metrics
        self._storage, self._pool = _storage(storage_url, key_prefix, timeout_s)
        self._strategy = MovingWindowRateLimiter(self._storage)
        self._timeout_s = timeout_s
        self._retry_s = retry_s
        self._warn_every_s = warn_every_s
        self._down_until = 0.0  # monotonic; storage not asked before then
        self._slow_since: float | None = None  # monotonic; the first timeout of a run of them
        self._down = False
        self._last_warning = -math.inf

    def __repr__(self) -> str:  # never the storage URL: it may carry a password
        return f"<RateLimiter shared={self.shared}>"

    async def check(self, kind: LimitKind, key: str) -> Decision:
        """Count one request of class ``kind`` for ``key`` and say whether it may proceed."""
        policy = self.policies.get(kind)
        if policy is None or not policy.enabled:
            return Decision.admitted(kind)
        if time.monotonic() < self._down_until:
            return self._fail_open(kind, None)
        try:
            async with asyncio.timeout(self._timeout_s if self.shared else None):
                verdicts = []
                for name, item in policy.items:
                    allowed = await self._strategy.hit(item, kind, key)
                    stats = await self._strategy.get_window_stats(item, kind, key)
                    verdicts.append((name, allowed, stats.remaining, stats.reset_time))
                    if not allowed:
                        break  # the later windows are not charged for a refused request
        except TimeoutError as exc:
            return self._timed_out(kind, exc)
        except Exception as exc:  # any other storage failure: Redis down, refusing, …
            return self._fail_open(kind, exc)
        self._slow_since = None
        self._recovered()
        now = time.time()
        name, allowed, remaining, reset_at = min(verdicts, key=lambda v: (v[1], v[2]))
        reset_s = max(0, math.ceil(reset_at - now))
        headers = {
            "RateLimit-Policy": policy_field(policy.items),
            "RateLimit": state_field(name, remaining, reset_s),
        }
        if allowed:
            return Decision(True, kind, 0, headers)
        retry = max(1, reset_s)
        headers["Retry-After"] = retry_after_field(retry)
        self._metrics.rate_limited.labels(kind=kind).inc()
        return Decision(False, kind, retry, headers)

    def _timed_out(self, kind: str, exc: Exception) -> Decision:
        """A check past the bound: admitted unchecked; the storage down only once timeouts have
        gone on for the bound itself (not the checks one stall of the loop cut at once)."""
        now = time.monotonic()
        if self._slow_since is None:
            self._slow_since = now
        if now - self._slow_since < self._timeout_s:
            self._metrics.rate_limit_fail_open.labels(kind=kind).inc()
            self._metrics.rate_limit_storage_errors.inc()
            return Decision.admitted(kind)
        self._slow_since = None
        return self._fail_open(kind, exc)

    def _fail_open(self, kind: str, exc: Exception | None) -> Decision:
        self._metrics.rate_limit_fail_open.labels(kind=kind).inc()
        if exc is None:
            return Decision.admitted(kind)
        self._metrics.rate_limit_storage_errors.inc()
        self._down_until = time.monotonic() + self._retry_s
        now = time.monotonic()
        if not self._down or now - self._last_warning >= self._warn_every_s:
            self._last_warning = now
            # the type only: a driver's message may quote the storage URL (and its password)
            log.warning(
                "rate-limit storage unavailable (%s): admitting requests unchecked",
                type(getattr(exc, "storage_error", exc)).__name__,
                extra={"rate_limit_storage": "down"},
            )
        self._down = True
        return Decision.admitted(kind)

    def _recovered(self) -> None:
        if self._down:
            self._down = False
            log.info("rate-limit storage available again", extra={"rate_limit_storage": "up"})

    async def aclose(self) -> None:
        """Close the Redis pool (and stop the memory storage's expiry task)."""
        if self._pool is not None:
            await self._pool.aclose()
        timer = getattr(self._storage, "timer", None)
        if isinstance(timer, asyncio.Task) and not timer.done():
            timer.cancel()
