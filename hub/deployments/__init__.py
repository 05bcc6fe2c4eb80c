"""Deployments: an agent plus pinned catalogs per server, and the sidecar bundle (DESIGN §10)."""
