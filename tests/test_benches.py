"""The benchmarks still measure what they say: ``make bench`` is not part of the suite, so a
bench whose own checks no longer hold (an API that changed under it) would only be found by
the next person to run it. Each in-process bench runs here on a small case; its own assertions
are the test. Nothing is timed or compared: the numbers are ``make bench``'s."""

from __future__ import annotations

from bench import catalog, policy


def test_the_catalog_bench_snapshots_and_bundles_every_tool() -> None:
    rows = catalog.measure(tools=12, page_size=5, rounds=1)
    assert [label for label, _seconds, _peak in rows] == [
        "SDK client lists the tools (base)",
        "hub snapshot (discover+store)",
        "hub bundle (names, ETag)",
    ]
    assert all(seconds > 0 and peak > 0 for _label, seconds, peak in rows)


def test_the_policy_bench_decides_for_every_size() -> None:
    rates = policy.measure(sizes=(10, 100), rounds=1)
    assert set(rates) == {10, 100}
    assert all(rate > 0 for rate in rates.values())
