"""Bundle sync (DESIGN §10.5): the hub's bundle at start and every ``--sync-interval``.

Each read sends the last ETag in ``If-None-Match`` (304 costs the hub no body). The bundle the
hub last confirmed is kept in memory and in the on-disk cache; a bundle whose listing changed
(tools, effects, hashes, drift) calls ``on_change`` — the server sends
``notifications/tools/list_changed``. Staleness is bounded: once the hub has not confirmed the
bundle for ``--max-stale`` seconds, :meth:`Syncer.current` refuses (lists fail, calls fail
closed) until it does again. A refusal by the hub (the key revoked, the deployment deleted) is
not staleness: the sidecar stops serving the bundle at once.

At start: a hub that refuses is an error (a bad key, an unknown deployment); an unreachable hub
falls back on the cache if it is within ``--max-stale``, else it is an error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import anyio

from hub.sidecar.bundle import Bundle, parse_bundle
from hub.sidecar.cache import BundleCache, CachedBundle
from hub.sidecar.config import SidecarConfig
from hub.sidecar.errors import HubRefused, HubUnreachable, SidecarError
from hub.sidecar.hubclient import HubClient

__all__ = ["Stale", "Syncer"]

log = logging.getLogger("hub.sidecar")


class Stale(SidecarError):
    """No bundle may be served just now; ``str`` says why, ``reason`` is ``hub_refused`` (the
    hub refused the bundle) or ``hub_unreachable`` (none yet, or too old)."""

    def __init__(self, message: str, reason: str = "hub_unreachable") -> None:
        super().__init__(message)
        self.reason = reason


class Syncer:
    def __init__(
        self,
        config: SidecarConfig,
        hub: HubClient,
        cache: BundleCache,
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._hub = hub
        self._cache = cache
        self._wall = wall
        self._bundle: Bundle | None = None
        self._confirmed_at = 0.0
        self._refused: str | None = None
        self._failing = False
        self.on_change: Callable[[], Awaitable[None]] | None = None
        self.syncs = 0

    # --- what the server reads ----------------------------------------------------------------
    def current(self) -> Bundle:
        if self._refused is not None:
            raise Stale(f"the hub refused the bundle: {self._refused}", "hub_refused")
        if self._bundle is None:
            raise Stale("no bundle yet")
        age = self._wall() - self._confirmed_at
        if age > self._config.max_stale_s:
            raise Stale(
                f"the hub has not confirmed the bundle for {age:.0f} s (past --max-stale "
                f"{self._config.max_stale_s:g} s)"
            )
        return self._bundle

    # --- start and the loop ---------------------------------------------------------------
    async def start(self) -> None:
        """The first sync; raises :class:`SidecarError` with the line to print on failure."""
        cached = self._cache.load()
        try:
            await self.sync_once(cached.etag if cached else None, cached)
            return
        except HubRefused as refused:
            raise SidecarError(str(refused)) from None
        except HubUnreachable as unreachable:
            if cached is None:
                raise SidecarError(f"{unreachable}; and there is no cached bundle") from None
            age = self._wall() - cached.confirmed_at
            if age > self._config.max_stale_s:
                raise SidecarError(
                    f"{unreachable}; and the cached bundle is {age:.0f} s old, past --max-stale "
                    f"{self._config.max_stale_s:g} s"
                ) from None
            self._adopt(parse_bundle(cached.body, cached.etag), cached.confirmed_at)
            self._failing = True
            log.warning("sidecar: %s; serving the cached bundle (%.0f s old)", unreachable, age)

    async def run(self) -> None:
        while True:
            await anyio.sleep(self._config.sync_interval_s)
            await self.sync_logged()

    async def sync_logged(self) -> None:
        try:
            await self.sync_once(self._bundle.etag if self._bundle else None, None)
        except HubRefused as refused:
            if self._refused is None:
                log.error("sidecar: %s; no longer serving the bundle", refused)
            self._refused = str(refused)
        except HubUnreachable as unreachable:
            if not self._failing:
                log.warning("sidecar: bundle sync failed: %s", unreachable)
            self._failing = True
        else:
            if self._failing:
                log.info("sidecar: bundle sync resumed")
            self._failing = False

    async def sync_once(self, etag: str | None, cached: CachedBundle | None) -> None:
        fetched = await self._hub.bundle(etag if (self._bundle or cached) else None)
        now = self._wall()
        self.syncs += 1
        self._refused = None
        if fetched.status == 304:
            if self._bundle is None:
                assert cached is not None  # noqa: S101 - a 304 answers only a sent ETag
                self._adopt(parse_bundle(cached.body, cached.etag), now)
            self._confirmed_at = now
            assert self._bundle is not None  # noqa: S101
            self._cache.store(CachedBundle(self._bundle.body, self._bundle.etag, now))
            return
        assert fetched.body is not None  # noqa: S101 - a 200 has a body
        bundle = parse_bundle(fetched.body, fetched.etag)
        before = self._bundle.listing_key() if self._bundle is not None else None
        self._adopt(bundle, now)
        self._cache.store(CachedBundle(bundle.body, bundle.etag, now))
        if before is not None and before != bundle.listing_key():
            log.info("sidecar: the deployment's tools changed")
            if self.on_change is not None:
                await self.on_change()

    def _adopt(self, bundle: Bundle, confirmed_at: float) -> None:
        self._bundle = bundle
        self._confirmed_at = confirmed_at
