"""Audit: the append-only record of who did what, and what was refused (DESIGN §11)."""
