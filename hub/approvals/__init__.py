"""Approvals: ``ask`` tool calls waiting for a person's decision, single use (DESIGN §10.3)."""
