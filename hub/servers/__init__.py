"""Servers: remote MCP servers registered under an immutable handle (DESIGN §3, §13)."""
