"""Tests of the hub's MCP client (``hub/mcp``), against real and hostile peers on loopback."""
