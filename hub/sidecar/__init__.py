"""The ``hub sidecar`` process (DESIGN §10.5): bundle sync, remote ports, the agent-facing server.

It reuses :mod:`hub.gateway.engine` with ports that talk to the hub over HTTP; like the engine it
imports no database code (an import-linter contract checks it).
"""
