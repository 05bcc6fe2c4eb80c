"""One sidecar process: first sync, then the sync loop beside the agent-facing server.

It ends cleanly (exit 0) on SIGTERM or SIGINT, and on stdin EOF in stdio mode; a failure to
start (a bad key, an unknown deployment, no hub and no usable cache, an unusable address) is a
:class:`~hub.sidecar.errors.SidecarError` whose one line the command prints.
"""

from __future__ import annotations

import logging
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from hub.gateway.engine.model import ToolEntry
from hub.sidecar.asking import Asking
from hub.sidecar.bundle import Bundle
from hub.sidecar.cache import BundleCache
from hub.sidecar.config import SidecarConfig
from hub.sidecar.direct import DirectCalls
from hub.sidecar.hubclient import HubClient
from hub.sidecar.listen import LoopbackServer, bind, write_token
from hub.sidecar.names import resolved
from hub.sidecar.relay import Relay
from hub.sidecar.server import SidecarServer
from hub.sidecar.stdio import serving_stdio
from hub.sidecar.sync import Syncer

__all__ = ["Serve", "run_sidecar"]

log = logging.getLogger("hub.sidecar")


@dataclass(frozen=True)
class Serve:
    """How the agent reaches the sidecar: stdio, or ``listen`` = (host, port) + token file."""

    listen: tuple[str, int] | None = None
    token_file: Path | None = None


async def _on_signals(scope: anyio.CancelScope, stop: list[LoopbackServer]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("sidecar: %s, stopping", signal.Signals(signum).name)
            for server in stop:
                server.stop()
            if not stop:
                scope.cancel()
            return


async def run_sidecar(config: SidecarConfig, serve: Serve) -> None:
    config = await resolved(config)
    hub = HubClient(config)
    sidecar_hub = HubClient(config, key=config.sidecar_key) if config.sidecar_key else None
    direct: DirectCalls | None = None
    try:
        cache = BundleCache(config.cache_dir, config.hub, config.tenant, config.deployment)
        syncer = Syncer(config, hub, cache)
        await syncer.start()
        relay = Relay(hub)
        if sidecar_hub is not None:
            direct = DirectCalls(config, hub, sidecar_hub)

        async def relayed(
            bundle: Bundle, tool: ToolEntry | None, name: str, arguments: Any, asking: Asking | None
        ) -> dict[str, Any]:
            if direct is not None and direct.handles(bundle, tool):
                return await direct.call(bundle, tool, name, arguments, asking)
            return await relay.call(tool, name, arguments, asking)

        sidecar = SidecarServer(syncer, relayed)
        syncer.on_change = sidecar.tools_changed
        loopback: list[LoopbackServer] = []
        if serve.listen is not None:
            assert serve.token_file is not None  # noqa: S101 - the command requires it
            sock = bind(*serve.listen)
            token = write_token(serve.token_file)
            loopback.append(LoopbackServer(sidecar, sock, token))
        async with anyio.create_task_group() as group:
            group.start_soon(syncer.run)
            if direct is not None:
                group.start_soon(direct.expire_loop)
            group.start_soon(_on_signals, group.cancel_scope, loopback)
            if loopback:
                log.info("sidecar: serving %s (token in %s)", loopback[0].url, serve.token_file)
                await loopback[0].serve()
            else:
                log.info("sidecar: serving on stdio")
                async with serving_stdio() as (read, write):
                    await sidecar.server.run(
                        read, write, sidecar.server.create_initialization_options()
                    )
            group.cancel_scope.cancel()
        log.info("sidecar: stopped")
    finally:
        if direct is not None:
            await direct.aclose()  # leased secrets are dropped with their clients
        if sidecar_hub is not None:
            await sidecar_hub.aclose()
        await hub.aclose()
