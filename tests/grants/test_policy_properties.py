"""Property tests of the grant engine against a tiny brute-force reference model (DESIGN §8)."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.grants.patterns import ACTIONS
from hub.grants.policy import CompiledPolicy, GrantRule, covers, may_confer

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RANK = {"allow": 1, "ask": 2, "deny": 3}

# --- the reference model: a literal reading of the rules, no index -----------------------------


def ref_matches(pattern: str, resource: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return resource.startswith(pattern[:-1])
    return pattern == resource


def ref_specificity(pattern: str) -> int:
    if pattern == "*":
        return 0
    if pattern.endswith("*"):
        return len(pattern) - 1
    return 10**6  # exact beats any wildcard


def ref_decide(rules: list[GrantRule], resource: str, action: str, at: datetime) -> str:
    live = [
        r
        for r in rules
        if ref_matches(r.resource, resource)
        and r.action in (action, "*")
        and (r.expires_at is None or r.expires_at > at)
    ]
    if not live:
        return "deny"
    top = max(ref_specificity(r.resource) for r in live)
    return max((r.effect for r in live if ref_specificity(r.resource) == top), key=RANK.__getitem__)


# --- strategies ------------------------------------------------------------------------------

segments = st.sampled_from(["lin", "linx", "a", "b", "ab"])
kinds = st.sampled_from(["tool", "credential", "server"])


@st.composite
def resources(draw: st.DrawFn) -> str:
    kind = draw(kinds)
    parts = draw(st.lists(segments, min_size=1, max_size=3))
    return f"{kind}:{'.'.join(parts)}"


@st.composite
def patterns(draw: st.DrawFn) -> str:
    resource = draw(resources())
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return "*"
    if choice == 1:
        return resource
    cuts = [i + 1 for i, ch in enumerate(resource) if ch in ":."]
    return resource[: draw(st.sampled_from(cuts))] + "*"


@st.composite
def rules(draw: st.DrawFn) -> GrantRule:
    expired = draw(st.booleans()) and draw(st.booleans())
    return GrantRule(
        id=uuid.uuid4(),
        resource=draw(patterns()),
        action=draw(st.sampled_from(ACTIONS)),
        effect=draw(st.sampled_from(["allow", "ask", "deny"])),
        expires_at=NOW - timedelta(seconds=1) if expired else None,
    )


def unique(rs: list[GrantRule]) -> list[GrantRule]:
    """A principal holds one grant per (resource, action)."""
    seen: dict[tuple[str, str], GrantRule] = {}
    for rule in rs:
        seen.setdefault((rule.resource, rule.action), rule)
    return list(seen.values())


grant_sets = st.lists(rules(), max_size=25).map(unique)
queries = st.tuples(resources(), st.sampled_from([a for a in ACTIONS if a != "*"]))

# --- properties --------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(grant_sets, st.lists(queries, min_size=1, max_size=10))
def test_engine_agrees_with_reference(rs: list[GrantRule], qs: list[tuple[str, str]]) -> None:
    policy = CompiledPolicy.compile(rs)
    for resource, action in qs:
        decision = policy.decide(resource, action, NOW)
        assert decision.effect == ref_decide(rs, resource, action, NOW)
        if decision.grant_id is not None:
            [winner] = [r for r in rs if r.id == decision.grant_id]
            assert ref_matches(winner.resource, resource)


@given(queries)
def test_default_is_deny(query: tuple[str, str]) -> None:
    decision = CompiledPolicy.compile([]).decide(*query, NOW)
    assert decision.effect == "deny"
    assert decision.grant_id is None


@given(patterns(), resources(), st.sampled_from(["allow", "ask"]))
def test_deny_dominates_at_equal_specificity(pattern: str, resource: str, effect: str) -> None:
    allow = GrantRule(uuid.uuid4(), pattern, "read", effect)  # type: ignore[arg-type]
    deny = GrantRule(uuid.uuid4(), pattern, "*", "deny")
    policy = CompiledPolicy.compile([allow, deny])
    if ref_matches(pattern, resource):
        assert policy.decide(resource, "read", NOW).effect == "deny"


@given(resources())
def test_more_specific_wins(resource: str) -> None:
    policy = CompiledPolicy.compile(
        [
            GrantRule(uuid.uuid4(), "*", "*", "deny"),
            GrantRule(uuid.uuid4(), resource.split(":")[0] + ":*", "*", "deny"),
            GrantRule(uuid.uuid4(), resource, "read", "allow"),
        ]
    )
    assert policy.decide(resource, "read", NOW).effect == "allow"
    assert policy.decide(resource, "write", NOW).effect == "deny"


@settings(max_examples=200)
@given(grant_sets, st.lists(queries, min_size=1, max_size=8), st.randoms())
def test_insertion_order_is_irrelevant(
    rs: list[GrantRule], qs: list[tuple[str, str]], rnd: random.Random
) -> None:
    shuffled = list(rs)
    rnd.shuffle(shuffled)
    a, b = CompiledPolicy.compile(rs), CompiledPolicy.compile(shuffled)
    for resource, action in qs:
        assert a.decide(resource, action, NOW) == b.decide(resource, action, NOW)


@settings(max_examples=300)
@given(grant_sets, patterns(), st.sampled_from(ACTIONS), st.lists(queries, min_size=1))
def test_adding_a_deny_never_widens(
    rs: list[GrantRule], pattern: str, action: str, qs: list[tuple[str, str]]
) -> None:
    before = CompiledPolicy.compile(rs)
    extra = GrantRule(uuid.uuid4(), pattern, action, "deny")
    after = CompiledPolicy.compile(unique([extra, *rs]))  # replaces an equal (resource, action)
    for resource, act in qs:
        if before.decide(resource, act, NOW).effect != "allow":
            assert after.decide(resource, act, NOW).effect != "allow"


@given(st.sampled_from(["a", "b", "linx", "lin2"]))
def test_prefix_never_crosses_a_boundary(suffix: str) -> None:
    policy = CompiledPolicy.compile([GrantRule(uuid.uuid4(), "tool:lin.*", "*", "allow")])
    assert policy.decide("tool:lin.x", "call", NOW).effect == "allow"
    assert policy.decide(f"tool:linx.{suffix}", "call", NOW).effect == "deny"
    assert policy.decide("tool:lin", "call", NOW).effect == "deny"
    assert not covers("tool:lin.*", "tool:linx.*")


@given(grant_sets, grant_sets, st.lists(queries, min_size=1))
def test_another_principals_grants_change_nothing(
    mine: list[GrantRule], theirs: list[GrantRule], qs: list[tuple[str, str]]
) -> None:
    """Policies are compiled per principal (and per tenant): other grants never leak in."""
    alone = CompiledPolicy.compile(mine)
    _other = CompiledPolicy.compile(theirs)
    for resource, action in qs:
        assert alone.decide(resource, action, NOW).effect == ref_decide(mine, resource, action, NOW)


def test_may_confer_refuses_what_the_holder_lacks() -> None:
    holder = CompiledPolicy.compile(
        [
            GrantRule(uuid.uuid4(), "grant:*", "*", "allow"),
            GrantRule(uuid.uuid4(), "tool:*", "call", "allow"),
            GrantRule(uuid.uuid4(), "tool:lin.secret", "call", "deny"),
        ]
    )
    assert may_confer(holder, "tool:gh.*", "call", NOW)
    assert not may_confer(holder, "tool:lin.*", "call", NOW)  # a carved-out deny inside
    assert not may_confer(holder, "*", "*", NOW)
    assert not may_confer(holder, "tool:*", "*", NOW)
    assert may_confer(holder, "grant:*", "*", NOW)


def test_expired_and_windowed_grants() -> None:
    from zoneinfo import ZoneInfo

    from hub.grants.conditions import TimeWindow, parse_conditions

    window = parse_conditions(
        {"time_window": {"start": "09:00", "end": "17:00", "tz": "Europe/Paris", "days": ["mon"]}}
    )
    assert isinstance(window, TimeWindow)
    assert window.tz == ZoneInfo("Europe/Paris")
    rule = GrantRule(uuid.uuid4(), "tool:*", "call", "allow", window=window)
    policy = CompiledPolicy.compile([rule])
    monday_noon_paris = datetime(2026, 11, 30, 11, 0, tzinfo=UTC)  # 12:00 in Paris, a Monday
    assert policy.decide("tool:x", "call", monday_noon_paris).effect == "allow"
    assert policy.decide("tool:x", "call", monday_noon_paris + timedelta(hours=7)).effect == "deny"
    assert policy.decide("tool:x", "call", monday_noon_paris + timedelta(days=1)).effect == "deny"
    overnight = parse_conditions({"time_window": {"start": "22:00", "end": "06:00"}})
    assert overnight is not None
    assert overnight.holds(datetime(2026, 11, 30, 23, 0, tzinfo=UTC))
    assert not overnight.holds(datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
