"""The data plane's gateway (DESIGN §10): the engine and its in-hub adapters and MCP endpoint.

- :mod:`hub.gateway.engine` — host-agnostic: wire names → validation → decision → approval →
  mediated credential → upstream call → shaping → audit, written against small ports. It imports
  no SQLAlchemy, models or repositories (an import-linter contract checks it), so the sidecar
  runs the same code with remote ports.
- the in-hub adapters (ports backed by the domain services) and the agents' endpoint sit beside it.
"""
