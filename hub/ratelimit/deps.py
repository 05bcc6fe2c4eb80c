"""The replica's rate limiter as a route dependency (``RateLimiterDep``), for endpoints that
answer a refusal in their own protocol (the agents' MCP endpoint: JSON-RPC ``42900``, class
``rate_limited``)::

    decision = await limiter.check("tool_call", str(agent_id))
    if not decision.allowed:
        ...  # error.data = {"class": "rate_limited", "retry_after_s": decision.retry_after_s},
        ...  # HTTP 200 with decision.headers (Retry-After, RateLimit-Policy, RateLimit)
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from hub.core.components import component
from hub.ratelimit.limiter import RateLimiter

__all__ = ["RateLimiterDep"]

RateLimiterDep = Annotated[RateLimiter, Depends(component(RateLimiter))]
