"""The compiled index against a linear scan: same decision, same deciding grant (DESIGN §8).

Patterns go several boundaries deep (``:`` and ``.``), so that a depth probed wrongly, skipped
wrongly or walked in the wrong order shows, and the reported grant is compared, not only the
effect, so that the order within a pattern (:func:`_rank`) shows too.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.grants.conditions import TimeWindow, parse_conditions
from hub.grants.patterns import ACTIONS
from hub.grants.policy import CompiledPolicy, Decision, GrantRule

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday
OPEN = parse_conditions({"time_window": {"start": "09:00", "end": "17:00"}})
SHUT = parse_conditions({"time_window": {"start": "18:00", "end": "19:00"}})
RANK = {"allow": 1, "ask": 2, "deny": 3}
WINDOWS: list[TimeWindow | None] = [None, None, None, OPEN, SHUT]


def reference(rules: list[GrantRule], resource: str, action: str, at: datetime) -> Decision:
    """Every rule in turn: the most specific matching pattern, then the strongest rule of it by
    the engine's ``_rank``, restated: effect, then a concrete action, then the id as text."""

    def specificity(pattern: str) -> float:
        if pattern == "*":
            return -1
        if pattern.endswith("*"):
            return len(pattern) - 1
        return float("inf")

    def matches(pattern: str) -> bool:
        if pattern == "*":
            return True
        if pattern.endswith("*"):
            return resource.startswith(pattern[:-1])
        return pattern == resource

    live = [
        r
        for r in rules
        if matches(r.resource)
        and r.action in (action, "*")
        and (r.expires_at is None or r.expires_at > at)
        and (r.window is None or r.window.holds(at))
    ]
    if not live:
        return Decision("deny", None)
    top = max(specificity(r.resource) for r in live)
    best = max(
        (r for r in live if specificity(r.resource) == top),
        key=lambda r: (RANK[r.effect], r.action != "*", str(r.id)),
    )
    return Decision(best.effect, best.id)


# Few segment names and two separators, so that patterns and resources share prefixes often.
names = st.sampled_from(["a", "b", "ab"])
separators = st.sampled_from([".", ".", ":"])


@st.composite
def resources(draw: st.DrawFn) -> str:
    """``kind:seg`` and up to four more segments; sometimes ending at a boundary, or bare."""
    if draw(st.integers(0, 19)) == 0:
        return "audit"
    out = draw(st.sampled_from(["tool", "credential"])) + ":" + draw(names)
    for _ in range(draw(st.integers(0, 4))):
        out += draw(separators) + draw(names)
    if draw(st.integers(0, 9)) == 0:
        out += draw(separators)
    return out


@st.composite
def patterns(draw: st.DrawFn) -> str:
    resource = draw(resources())
    choice = draw(st.integers(0, 5))
    cuts = [i + 1 for i, ch in enumerate(resource) if ch in ":."]
    if choice == 0 or not cuts:
        return "*" if choice == 0 else resource
    if choice == 1:
        return resource
    return resource[: draw(st.sampled_from(cuts))] + "*"  # a prefix at any depth


@st.composite
def rules(draw: st.DrawFn) -> GrantRule:
    expiry = draw(st.sampled_from([None, None, None, timedelta(seconds=-1), timedelta(hours=1)]))
    return GrantRule(
        id=uuid.uuid4(),
        resource=draw(patterns()),
        action=draw(st.sampled_from(["*", "*", "call", "read"])),
        effect=draw(st.sampled_from(["allow", "ask", "deny"])),
        expires_at=None if expiry is None else NOW + expiry,
        window=draw(st.sampled_from(WINDOWS)),
    )


queries = st.tuples(
    st.one_of(resources(), patterns().map(lambda p: p.removesuffix("*"))),
    st.sampled_from([*ACTIONS, "call", "read"]),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(rules(), max_size=30), st.lists(queries, min_size=1, max_size=12))
def test_index_decides_as_the_linear_scan(rs: list[GrantRule], qs: list[tuple[str, str]]) -> None:
    """Twice over: the first pass seals each pattern it reaches, the second reads the answer
    tables those seals worked out (or, for a pattern with an expiry or a window, its rules)."""
    policy = CompiledPolicy.compile(rs)
    for _ in range(2):
        for resource, action in qs:
            assert policy.decide(resource, action, NOW) == reference(rs, resource, action, NOW)


def test_a_sealed_pattern_still_answers_an_action_outside_its_table() -> None:
    """Asking ``call`` seals ``tool:a.*``; a request naming an action no resource has (here
    ``*``, which ``may_confer`` never sends but a caller could) takes the rules, not a slot."""
    wild = rule("tool:a.*", "*", "allow")
    policy = CompiledPolicy.compile([wild])
    assert policy.decide("tool:a.x", "call", NOW) == Decision("allow", wild.id)
    assert policy.decide("tool:a.x", "*", NOW) == Decision("allow", wild.id)
    assert policy.decide("tool:a.x", "launch", NOW) == Decision("allow", wild.id)


@given(st.lists(rules(), max_size=30))
def test_rules_yields_every_rule_once(rs: list[GrantRule]) -> None:
    policy = CompiledPolicy.compile(rs)
    assert Counter(r.id for r in policy.rules()) == Counter(r.id for r in rs)
    assert policy.size == len(rs)


def rule(resource: str, action: str, effect: str, **kw: object) -> GrantRule:
    return GrantRule(uuid.uuid4(), resource, action, effect, **kw)  # type: ignore[arg-type]


def test_depths_without_prefixes_are_skipped_not_the_ones_below() -> None:
    """Prefixes at depths 1 and 3 only; a deeper resource falls through the empty depths."""
    shallow = rule("tool:*", "*", "ask")
    deep = rule("tool:a.b.c.*", "read", "allow")
    policy = CompiledPolicy.compile([shallow, deep, rule("*", "*", "deny")])
    assert policy.decide("tool:a.b.c.d.e", "read", NOW) == Decision("allow", deep.id)
    assert policy.decide("tool:a.b.c.d.e", "call", NOW) == Decision("ask", shallow.id)
    assert policy.decide("tool:a.b.x", "read", NOW) == Decision("ask", shallow.id)
    assert policy.decide("credential:a.b.c.d", "read", NOW).effect == "deny"


def test_an_exact_pattern_beside_the_resource_does_not_hide_the_prefixes() -> None:
    """``tool:a.b`` is exact under ``tool:a.``: ``tool:a.c`` finds that node but no exact."""
    exact = rule("tool:a.b", "call", "deny")
    prefix = rule("tool:*", "call", "allow")
    expired = rule("tool:a.c", "call", "deny", expires_at=NOW)
    policy = CompiledPolicy.compile([exact, prefix, expired])
    assert policy.decide("tool:a.b", "call", NOW) == Decision("deny", exact.id)
    assert policy.decide("tool:a.c", "call", NOW) == Decision("allow", prefix.id)
    assert policy.decide("tool:a.c", "call", NOW - timedelta(seconds=1)).effect == "deny"
    assert policy.decide("tool:a.b", "read", NOW) == Decision("deny", None)  # no read grant


def test_within_a_pattern_the_strongest_applicable_rule_decides() -> None:
    allow = rule("tool:a.*", "call", "allow")
    deny = rule("tool:a.*", "*", "deny", window=SHUT)  # a deny, but not now
    ask = rule("tool:a.*", "*", "ask")
    policy = CompiledPolicy.compile([allow, deny, ask])
    assert policy.decide("tool:a.x", "call", NOW) == Decision("ask", ask.id)
    assert policy.decide("tool:a.x", "call", NOW + timedelta(hours=6, minutes=30)) == Decision(
        "deny", deny.id
    )
