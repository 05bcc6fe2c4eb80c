"""The engine's ports backed by the hub's own services (the in-hub host, DESIGN §10)."""
