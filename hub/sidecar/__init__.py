"""The ``hub sidecar`` process (DESIGN §10.5, §15): bundle sync, remote ports, the agent's server.

It reuses :mod:`hub.gateway.engine` with ports that talk to the hub over HTTP; like the engine it
imports no database code (an import-linter contract checks it).

- :mod:`~hub.sidecar.config` — the checked settings (https unless loopback, loopback ``--listen``);
- :mod:`~hub.sidecar.hubclient` — the bounded, verified-TLS client to the operator's hub;
- :mod:`~hub.sidecar.bundle` — the bundle parsed into the engine's ``DeploymentView``;
- :mod:`~hub.sidecar.cache` — the 0600 on-disk bundle cache;
- :mod:`~hub.sidecar.sync` — ETag sync, bounded staleness, change detection;
- :mod:`~hub.sidecar.server` — the official SDK server: listing, calls, ``list_changed``;
- :mod:`~hub.sidecar.relay` — relay mode: calls to the hub's endpoint;
- :mod:`~hub.sidecar.direct` — direct mode: the hub's decision, a lease, the engine upstream;
- :mod:`~hub.sidecar.stdio`, :mod:`~hub.sidecar.listen` — the two transports;
- :mod:`~hub.sidecar.run` — one process from first sync to a clean exit.
"""
