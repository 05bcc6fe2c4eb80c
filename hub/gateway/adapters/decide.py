"""The calling agent's grant effects, from its compiled policy (cached by ``grants_version``)."""

from __future__ import annotations

from datetime import datetime

from hub.gateway.engine.model import Effect
from hub.grants.policy import CompiledPolicy

__all__ = ["PolicyDecider"]


class PolicyDecider:
    """:class:`~hub.gateway.engine.ports.DecidePort` over one compiled policy at one instant."""

    def __init__(self, policy: CompiledPolicy, grants_version: int, at: datetime) -> None:
        self._policy = policy
        self._version = grants_version
        self._at = at

    @property
    def grants_version(self) -> int:
        return self._version

    def grant_effect(self, grant_key: str) -> Effect:
        return self._policy.decide(grant_key, "call", self._at).effect
