"""Discovery: ``POST /tenants/{t}/mcp/discover`` (DESIGN §5)."""
