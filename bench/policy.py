"""Decisions per second of the compiled grant index for 10, 1,000 and 100,000 grants.

The index makes a decision cost O(length of the resource), so the rate should stay roughly flat
as a principal's grants grow. To measure that and nothing else, the numbers in the grant patterns
and the queried resources are zero-padded to six digits (``tool:srv000042.tool000042``): every
size queries resources of the same length, so what changes with the size is only the number of
grants. The sizes take turns over five rounds and each keeps its best round, so a slow moment of
the machine does not fall on one size only. Printed side by side with the ratio to the 10-grant
baseline, all measured in this run. A report, not a test.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime

from hub.grants.patterns import Effect
from hub.grants.policy import CompiledPolicy, GrantRule

SIZES = (10, 1_000, 100_000)
QUERIES = 200_000
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def _grants(n: int, rnd: random.Random) -> list[GrantRule]:
    rules: list[GrantRule] = []
    for i in range(n):
        shape = i % 3
        if shape == 0:
            resource = f"tool:srv{i:06d}.*"
        elif shape == 1:
            resource = f"tool:srv{i:06d}.tool{i:06d}"
        else:
            resource = f"credential:{uuid.UUID(int=rnd.getrandbits(128))}"
        effect: Effect = rnd.choice(["allow", "allow", "ask", "deny"])
        action = rnd.choice(["call", "*", "read"])
        rules.append(GrantRule(uuid.uuid4(), resource, action, effect))
    rules.append(GrantRule(uuid.uuid4(), "*", "read", "allow"))
    return rules


def _queries(n: int, rnd: random.Random) -> list[tuple[str, str]]:
    out = []
    for _ in range(QUERIES):
        i = rnd.randrange(max(n, 1) * 2)  # half hit a grant's server, half miss
        out.append((f"tool:srv{i:06d}.tool{i:06d}", rnd.choice(["call", "read"])))
    return out


def measure(sizes: tuple[int, ...] = SIZES, rounds: int = 5) -> dict[int, float]:
    """The best rate of each size over ``rounds`` rounds, the sizes taking turns in each round,
    so that a slow moment of the machine falls on every size alike rather than on one."""
    cases = []
    for n in sizes:
        rnd = random.Random(n)
        cases.append((n, CompiledPolicy.compile(_grants(n, rnd)), _queries(n, rnd)))
    best = dict.fromkeys(sizes, 0.0)
    for _ in range(rounds):
        for n, policy, queries in cases:
            decide = policy.decide
            start = time.perf_counter()
            for resource, action in queries:
                decide(resource, action, NOW)
            best[n] = max(best[n], len(queries) / (time.perf_counter() - start))
    return best


def main() -> None:
    rates = measure()
    baseline = rates[SIZES[0]]
    print(f"{'grants':>10} {'decisions/s':>14} {'vs 10 grants':>14}")
    for n, rate in rates.items():
        print(f"{n:>10,} {rate:>14,.0f} {rate / baseline:>13.2f}x")


if __name__ == "__main__":
    main()
