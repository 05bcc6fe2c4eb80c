"""The grant engine: a pure function of (grants, resource, action, time) to a decision (DESIGN §8).

Rules:

- A resource pattern is exact (``credential:3f…``), a literal prefix ending at a ``:`` or ``.``
  boundary followed by ``*`` (``tool:linear.*``, ``credential:*``), or ``*`` alone.
- A grant matches a request when its pattern matches the resource, its action is the request's
  action or ``*``, it has not expired, and its conditions hold at the time of the request.
- The most specific matching pattern wins: exact beats any wildcard, a longer literal prefix beats
  a shorter one, ``*`` is least specific. Specificity belongs to the pattern alone: an exact
  action does not outrank ``*``. Among the matches at the winning specificity, deny beats ask beats
  allow. No match is deny.

A principal's grants are compiled once into :class:`CompiledPolicy`, an index keyed by the
pattern's literal part, so a decision looks up the exact resource, then each boundary prefix of it
from longest to shortest, then ``*``: O(length of the resource) dictionary probes, independent of
how many grants the principal holds. Nothing here does I/O; the clock is passed in. What a
pattern and an action may be is :mod:`hub.grants.patterns`; a grant's time window is
:mod:`hub.grants.conditions`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hub.grants.conditions import TimeWindow
from hub.grants.patterns import ACTIONS, Effect, actions_of

__all__ = ["CompiledPolicy", "Decision", "GrantRule", "covers", "may_confer"]

_EFFECT_RANK: Mapping[str, int] = {"deny": 3, "ask": 2, "allow": 1}


@dataclass(frozen=True, slots=True)
class GrantRule:
    """One grant as the engine sees it."""

    id: uuid.UUID
    resource: str
    action: str
    effect: Effect
    expires_at: datetime | None = None
    window: TimeWindow | None = None

    @property
    def static(self) -> bool:
        """Whether the rule applies the same way at every moment (no expiry, no window)."""
        return self.expires_at is None and self.window is None

    def applies(self, action: str, at: datetime) -> bool:
        if self.action != "*" and self.action != action:
            return False
        if self.expires_at is not None and self.expires_at <= at:
            return False
        return self.window is None or self.window.holds(at)


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect
    grant_id: uuid.UUID | None


DENY = Decision("deny", None)
#: The concrete actions a request can name, each with its slot in a group's answer table.
_SLOTS: Mapping[str, int] = {a: i for i, a in enumerate(a for a in ACTIONS if a != "*")}


def _rank(rule: GrantRule) -> tuple[int, int, str]:
    # effect decides; the rest only makes the *reported* grant independent of insertion order
    return (_EFFECT_RANK[rule.effect], rule.action != "*", str(rule.id))


def _strongest(rules: Iterable[GrantRule], action: str, at: datetime) -> GrantRule | None:
    best: GrantRule | None = None
    for rule in rules:
        if rule.applies(action, at) and (best is None or _rank(rule) > _rank(best)):
            best = rule
    return best


class _Sealed:
    """The rules of one pattern, and, when none of them depends on time, their answer for each
    concrete action worked out once (``table[_SLOTS[action]]``, ``None`` where no rule applies).

    The table is what keeps a decision cheap in a large policy: a probe that finds a pattern
    reads one tuple and a shared :class:`Decision` instead of walking rule objects and building
    a result, so the memory a decision touches does not grow with the grants held. A pattern's
    rules are sealed on its first decision, not at compile time, so compiling stays one cheap
    pass over the grants and a policy pays only for the patterns it is asked about."""

    __slots__ = ("rules", "table")

    def __init__(self, rules: list[GrantRule]) -> None:
        self.rules = rules
        self.table: tuple[Decision | None, ...] | None = None
        if all(rule.static for rule in rules):
            answers: list[Decision | None] = []
            for action in _SLOTS:
                best = _strongest(rules, action, _EPOCH)
                answers.append(None if best is None else Decision(best.effect, best.id))
            self.table = tuple(answers)

    def answer(self, action: str, slot: int | None, at: datetime) -> Decision | None:
        table = self.table
        if table is not None and slot is not None:
            return table[slot]
        best = _strongest(self.rules, action, at)
        return None if best is None else Decision(best.effect, best.id)


#: A pattern's entry in the index: its rules as compiled, or, once asked about, sealed.
_Entry = list[GrantRule] | _Sealed


def _sealed(index: dict[str, _Entry], key: str, entry: _Entry) -> _Sealed:
    if isinstance(entry, _Sealed):
        return entry
    sealed = index[key] = _Sealed(entry)
    return sealed


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # any moment: a sealed group's rules ignore time


@dataclass
class CompiledPolicy:
    """A principal's grants indexed for O(resource length) decisions."""

    exact: dict[str, _Entry] = field(default_factory=dict)
    prefixes: dict[str, _Entry] = field(default_factory=dict)
    anything: _Sealed = field(default_factory=lambda: _Sealed([]))
    #: the lengths of the prefix patterns' literal parts: a boundary of the resource at any
    #: other length cannot name a pattern, so it is not looked up
    prefix_lengths: frozenset[int] = frozenset()
    size: int = 0
    #: every rule applies the same way at every moment (:attr:`GrantRule.static`): a decision
    #: of this policy never changes with the clock
    static: bool = True

    @classmethod
    def compile(cls, rules: Iterable[GrantRule]) -> CompiledPolicy:
        policy = cls()
        prefixes: dict[str, list[GrantRule]] = {}
        exact: dict[str, list[GrantRule]] = {}
        anything: list[GrantRule] = []
        for rule in rules:
            policy.size += 1
            policy.static = policy.static and rule.static
            if rule.resource == "*":
                anything.append(rule)
            elif rule.resource.endswith("*"):
                prefixes.setdefault(rule.resource[:-1], []).append(rule)
            else:
                exact.setdefault(rule.resource, []).append(rule)
        policy.anything = _Sealed(anything)
        policy.exact.update(exact)
        policy.prefixes.update(prefixes)
        policy.prefix_lengths = frozenset(map(len, prefixes))
        return policy

    def decide(self, resource: str, action: str, at: datetime) -> Decision:
        """The effect for ``action`` on ``resource`` at time ``at``, and the grant that decided.

        The exact pattern first, then each ``:`` or ``.`` boundary of the resource from the
        longest prefix to the shortest (found with ``rfind``, and looked up only at a length
        some prefix pattern has), then ``*``."""
        slot = _SLOTS.get(action)
        entry = self.exact.get(resource)
        if entry is not None:
            found = _sealed(self.exact, resource, entry).answer(action, slot, at)
            if found is not None:
                return found
        lengths = self.prefix_lengths
        if lengths:
            prefixes = self.prefixes
            end = len(resource)
            while end > 0:
                end = max(resource.rfind(":", 0, end), resource.rfind(".", 0, end))
                if end >= 0 and end + 1 in lengths:
                    key = resource[: end + 1]
                    entry = prefixes.get(key)
                    if entry is not None:
                        found = _sealed(prefixes, key, entry).answer(action, slot, at)
                        if found is not None:
                            return found
        return self.anything.answer(action, slot, at) or DENY

    def rules(self) -> Iterable[GrantRule]:
        yield from self.anything.rules
        for index in (self.prefixes, self.exact):
            for entry in index.values():
                yield from (entry.rules if isinstance(entry, _Sealed) else entry)


def covers(pattern: str, other: str) -> bool:
    """True when every resource ``other`` can match is also matched by ``pattern``."""
    if pattern == "*":
        return True
    if other == "*":
        return False
    if not pattern.endswith("*"):
        return pattern == other
    return other.startswith(pattern[:-1])


def may_confer(
    holder: CompiledPolicy,
    resource: str,
    action: str,
    at: datetime,
    *,
    expires_at: datetime | None = None,
) -> bool:
    """Whether ``holder`` holds, with ``allow``, everything a grant (resource, action) confers.

    ``*`` as an action confers the kind's own actions (``tool:*`` : ``*`` is ``tool:*`` :
    ``call``). Every concrete action the grant covers must be allowed on the pattern itself, by a
    grant that is unconditional and does not expire before the new one; and no non-allow grant of
    the holder may sit inside the conferred scope (a deny carved out of the holder's wildcard must
    not be handed on as an allow). No escalation (DESIGN §8).
    """
    actions = list(actions_of(resource)) if action == "*" else [action]
    by_id = {rule.id: rule for rule in holder.rules()}
    for concrete in actions:
        decision = holder.decide(resource, concrete, at)
        if decision.effect != "allow" or decision.grant_id is None:
            return False
        rule = by_id[decision.grant_id]
        if rule.window is not None:
            return False
        if rule.expires_at is not None and (expires_at is None or expires_at > rule.expires_at):
            return False
    for rule in holder.rules():
        if rule.effect == "allow" or not covers(resource, rule.resource):
            continue
        if rule.expires_at is not None and rule.expires_at <= at:
            continue
        if rule.action == "*" or action == "*" or rule.action == action:
            return False
    return True
