"""Credentials: encrypted, write-only secrets for upstream servers (DESIGN §3, §9)."""

from hub.credentials.constants import NO_TOKEN

__all__ = ["NO_TOKEN"]
