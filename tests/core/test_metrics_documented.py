"""Every metric the hub exposes is in the README's metrics table, and nothing else is."""

from __future__ import annotations

import re
from pathlib import Path

from hub.core.metrics import Metrics

README = Path(__file__).resolve().parents[2] / "README.md"


def _documented() -> set[str]:
    text = README.read_text()
    section = text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(hub_[a-z_]+)` \|", section, re.MULTILINE))


def _exposed() -> set[str]:
    metrics = Metrics()
    metrics.count_upstream_sessions()(0, {"kept": 1})  # as the wiring does
    metrics.count_gateway_cache()("views", 0)
    # a counter's family is named without ``_total``; the README names the sample
    return {
        f"{family.name}_total" if family.type == "counter" else family.name
        for family in metrics.registry.collect()
    }


def test_the_readme_lists_every_metric_and_no_other() -> None:
    assert _exposed() == _documented()
