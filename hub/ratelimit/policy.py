"""The classes of rate limits and the ``HUB_RATE_LIMITS`` syntax.

Four classes, each counted per its own key:

============  ==============================================  ==========  =============
class         what is counted                                  key         default
============  ==============================================  ==========  =============
``rest``      every authenticated REST request                 principal   ``600/minute``
``tool_call`` every ``tools/call`` on the agents' endpoint      agent       ``120/minute``
``discovery`` ``POST …/mcp/discover`` (and drift-watch probes)  tenant      ``30/minute``
``snapshot``  ``POST …/servers/{handle}/catalogs``              tenant      ``30/minute``
============  ==============================================  ==========  =============

``HUB_RATE_LIMITS`` overrides some of them: comma-separated ``class=LIMIT[|LIMIT…]`` entries, where
``LIMIT`` is the ``limits`` library's notation (``N/second``, ``N/minute``, ``N per 10 seconds``,
``N/hour``, ``N/day``) and several limits joined with ``|`` all apply; ``class=off`` turns a class
off. Classes not named keep their default. Example::

    HUB_RATE_LIMITS="rest=20/second|600/minute, tool_call=60/minute, snapshot=off"

An unknown class or a limit that does not parse stops the hub at start-up (never quoting more than
the class name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from limits import RateLimitItem, parse

__all__ = [
    "DEFAULT_LIMITS",
    "KINDS",
    "LimitKind",
    "Policies",
    "Policy",
    "RateLimitConfigError",
    "parse_policies",
]

LimitKind = Literal["rest", "tool_call", "discovery", "snapshot"]
KINDS: tuple[LimitKind, ...] = get_args(LimitKind)

DEFAULT_LIMITS: Mapping[LimitKind, str] = {
    "rest": "600/minute",
    "tool_call": "120/minute",
    "discovery": "30/minute",
    "snapshot": "30/minute",
}

_OFF = frozenset({"off", "none", "0"})


class RateLimitConfigError(ValueError):
    """``HUB_RATE_LIMITS`` cannot be used; the message names the entry's class, never more."""


@dataclass(frozen=True)
class Policy:
    """One class's limits; each ``(name, item)`` is advertised as its own quota policy."""

    kind: LimitKind
    items: tuple[tuple[str, RateLimitItem], ...]

    @property
    def enabled(self) -> bool:
        return bool(self.items)


Policies = Mapping[LimitKind, Policy]


def _items(kind: LimitKind, text: str) -> tuple[tuple[str, RateLimitItem], ...]:
    if text.strip().lower() in _OFF:
        return ()
    parts = [part for part in text.split("|") if part.strip()]
    items: list[tuple[str, RateLimitItem]] = []
    for index, part in enumerate(parts):
        try:
            item = parse(part)
        except ValueError:
            raise RateLimitConfigError(
                f"HUB_RATE_LIMITS: the limit of {kind!r} does not parse"
            ) from None
        if item.amount < 1:
            raise RateLimitConfigError(f"HUB_RATE_LIMITS: the limit of {kind!r} is not positive")
        items.append((kind if len(parts) == 1 else f"{kind}-{index + 1}", item))
    if not items:
        raise RateLimitConfigError(f"HUB_RATE_LIMITS: {kind!r} has no limit (use {kind}=off)")
    return tuple(items)


def parse_policies(text: str) -> dict[LimitKind, Policy]:
    """Every class's policy: the defaults, overridden by the entries of ``text``."""
    chosen: dict[LimitKind, str] = dict(DEFAULT_LIMITS)
    seen: set[str] = set()
    for entry in text.split(","):
        if not entry.strip():
            continue
        name, sep, value = entry.partition("=")
        name = name.strip()
        if not sep or name not in KINDS:
            raise RateLimitConfigError(
                "HUB_RATE_LIMITS: every entry is class=LIMIT, class one of " + ", ".join(KINDS)
            )
        if name in seen:
            raise RateLimitConfigError(f"HUB_RATE_LIMITS: {name!r} is named twice")
        seen.add(name)
        chosen[name] = value
    return {kind: Policy(kind, _items(kind, chosen[kind])) for kind in KINDS}
