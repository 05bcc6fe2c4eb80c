"""Rate limits shared across replicas (DESIGN §11), on the ``limits`` library.

- :mod:`~hub.ratelimit.policy` — the classes of limits and the ``HUB_RATE_LIMITS`` syntax;
- :mod:`~hub.ratelimit.headers` — the IETF ``RateLimit-Policy``/``RateLimit`` fields;
- :mod:`~hub.ratelimit.limiter` — :class:`RateLimiter`, whose ``check(kind, key)`` answers a
  :class:`Decision`; a replica holds one, as a component.

Infrastructure below the domains: it knows nothing of principals, tenants or routes; callers pass
the key they limit by (a principal id for ``rest``, an agent id for ``tool_call``, a tenant id for
``discovery`` and ``snapshot``).
"""

from hub.ratelimit.limiter import Decision, RateLimiter
from hub.ratelimit.policy import (
    DEFAULT_LIMITS,
    KINDS,
    LimitKind,
    Policies,
    Policy,
    RateLimitConfigError,
    parse_policies,
)

__all__ = [
    "DEFAULT_LIMITS",
    "KINDS",
    "Decision",
    "LimitKind",
    "Policies",
    "Policy",
    "RateLimitConfigError",
    "RateLimiter",
    "parse_policies",
]
