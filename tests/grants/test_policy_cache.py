"""The compiled-policy cache (``hub.grants.cache``) keeps at most ``max_rules`` grants across its
policies as well as at most ``max_entries`` principals: what it keeps is bounded by what it
holds, not by how many principals it has seen."""

from __future__ import annotations

import uuid

from hub.grants.cache import PolicyCache
from hub.grants.policy import CompiledPolicy, GrantRule


def _policy(grants: int) -> CompiledPolicy:
    return CompiledPolicy.compile(
        GrantRule(uuid.uuid4(), f"tool:srv{n}.*", "call", "allow") for n in range(grants)
    )


def test_the_grants_kept_stay_within_the_budget_oldest_out_first() -> None:
    cache = PolicyCache(max_rules=350)
    principals = [uuid.uuid4() for _ in range(5)]
    policies = [_policy(100) for _ in principals]
    for principal, policy in zip(principals, policies, strict=True):
        cache.put(principal, 1, policy)
        assert cache.kept_rules <= 350
    assert cache.kept_rules == 300
    assert [cache.get(p, 1) for p in principals] == [None, None, *policies[2:]]


def test_a_policy_over_the_budget_is_not_kept_and_pushes_nothing_out() -> None:
    cache = PolicyCache(max_rules=350)
    small, big = uuid.uuid4(), uuid.uuid4()
    kept = _policy(50)
    cache.put(small, 1, kept)
    cache.put(big, 1, _policy(351))
    assert cache.get(big, 1) is None
    assert cache.get(small, 1) is kept
    assert cache.kept_rules == 50


def test_a_new_version_replaces_the_old_one_and_its_weight() -> None:
    cache = PolicyCache(max_rules=1_000)
    principal = uuid.uuid4()
    cache.put(principal, 1, _policy(400))
    newer = _policy(30)
    cache.put(principal, 2, newer)
    assert (cache.kept_rules, cache.get(principal, 1), cache.get(principal, 2)) == (30, None, newer)
    cache.put(principal, 3, _policy(1_001))  # too big now: the old one goes, nothing is kept
    assert (cache.kept_rules, cache.get(principal, 2)) == (0, None)


def test_the_count_bound_still_holds_and_a_policy_of_no_grants_counts_one() -> None:
    cache = PolicyCache(max_entries=3, max_rules=1_000)
    principals = [uuid.uuid4() for _ in range(4)]
    for principal in principals:
        cache.put(principal, 1, _policy(0))
    assert cache.get(principals[0], 1) is None
    assert all(cache.get(p, 1) is not None for p in principals[1:])
    assert cache.kept_rules == 3
