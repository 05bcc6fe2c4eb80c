"""The IETF rate-limit header fields (draft-ietf-httpapi-ratelimit-headers-09/-10).

Both are Structured Field lists (RFC 9651) of items named by a quoted policy identifier:

- ``RateLimit-Policy: "rest";q=600;w=60`` — each quota policy: ``q`` the quota, ``w`` the window
  in seconds. The field stays the same from response to response.
- ``RateLimit: "rest";r=0;t=17`` — the live counters of the policy closest to being exhausted (the
  one that refused the request, when one did): ``r`` the quota units remaining, ``t`` the seconds
  until the quota resets (the draft's delay-seconds).

A refused request also gets ``Retry-After`` (RFC 9110 §10.2.3) in delay-seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from limits import RateLimitItem

__all__ = ["policy_field", "retry_after_field", "state_field"]


def _name(identifier: str) -> str:
    # identifiers are the hub's own class names (lower-case ASCII and "-"): a valid sf-string
    return '"' + identifier + '"'


def policy_field(items: Sequence[tuple[str, RateLimitItem]]) -> str:
    return ", ".join(f"{_name(name)};q={item.amount};w={item.get_expiry()}" for name, item in items)


def state_field(name: str, remaining: int, reset_s: int) -> str:
    return f"{_name(name)};r={max(0, remaining)};t={max(0, reset_s)}"


def retry_after_field(seconds: int) -> str:
    return str(max(1, seconds))
