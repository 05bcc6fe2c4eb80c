"""Grants: the policy engine, role templates and the grants API (DESIGN §8)."""
