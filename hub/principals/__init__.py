"""Principals (users, agents, services), their API keys, the platform admin and ``/whoami``."""
