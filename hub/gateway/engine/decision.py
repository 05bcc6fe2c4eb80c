"""The effective decision for (agent, tool) (DESIGN §8 "Tools", §10.1, §10.6).

The grant engine's effect on ``tool:<handle>.<tool>`` : ``call`` comes first — no match is
``deny``. Then ``ask`` is a ceiling on ``allow``: an ``allow`` stays ``allow`` only when the
deployment lists the tool in ``allow_without_ask``, the tool does not declare
``destructiveHint: true``, and the tool has not drifted. A drifted tool under
``HUB_DRIFT_POLICY=deny`` is refused even where it would ask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hub.gateway.engine.model import Effect, ToolEntry

__all__ = ["EffectiveDecision", "effective"]

DriftPolicy = Literal["ask", "deny"]


@dataclass(frozen=True)
class EffectiveDecision:
    effect: Effect
    reasons: tuple[str, ...]  # why, in the order the rules applied (for grants/check and audit)


def effective(
    grant_effect: Effect, tool: ToolEntry, *, drift_policy: DriftPolicy = "ask"
) -> EffectiveDecision:
    if grant_effect == "deny":
        return EffectiveDecision("deny", ("grant:deny",))
    reasons: list[str] = [f"grant:{grant_effect}"]
    if tool.drifted:
        if drift_policy == "deny":
            return EffectiveDecision("deny", (*reasons, "drifted:deny"))
        reasons.append("drifted")
    if grant_effect == "ask":
        return EffectiveDecision("ask", tuple(reasons))
    if not tool.listed_without_ask:
        reasons.append("ask_ceiling")
    if tool.destructive:
        reasons.append("destructive_hint")
    if len(reasons) > 1:
        return EffectiveDecision("ask", tuple(reasons))
    return EffectiveDecision("allow", (*reasons, "allow_without_ask"))
