"""Tenants: created and managed by the platform admin (DESIGN §4, §12)."""
