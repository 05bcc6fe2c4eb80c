"""The gateway's compiled argument validators and RE2 programs are kept within a byte budget, not a
count: tool definitions come from upstream servers, and one schema may be megabytes."""

from __future__ import annotations

import json
from typing import Any

from hub.gateway.engine import validation
from hub.gateway.engine.validation import ArgumentError, ValidatorCache


def _schema(n: int, padding: int) -> dict[str, Any]:
    """A schema of about ``padding`` bytes that requires the string ``q``."""
    return {
        "type": "object",
        "description": f"schema {n} " + "p" * padding,
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }


def test_validators_kept_stay_within_the_budget_and_still_validate() -> None:
    cache = ValidatorCache(budget=50_000)
    oldest = cache.get("sha0", _schema(0, 10_000), strict=True)
    for n in range(40):
        validator = cache.get(f"sha{n}", _schema(n, 10_000), strict=True)
        assert validator.errors({"q": "x"}) == []
        assert validator.errors({}) == [ArgumentError("$", "'q' is a required property")]
        assert 0 < cache.kept_bytes <= 50_000
    newest = cache.get("sha39", _schema(39, 10_000), strict=True)
    assert cache.get("sha39", {"not": "read: the kept one answers"}, strict=True) is newest
    first = cache.get("sha0", _schema(0, 10_000), strict=True)
    assert first is not oldest  # pushed out by the others' weight, compiled again
    assert cache.get("sha0", _schema(0, 10_000), strict=True) is first


def test_a_schema_over_the_budget_is_used_and_not_kept() -> None:
    cache = ValidatorCache(budget=5_000)
    big = _schema(1, 20_000)
    assert len(json.dumps(big)) > 5_000
    one, two = (cache.get("big", big, strict=False) for _ in range(2))
    assert one is not two
    assert one.errors({"q": 1})[0].path == "$.q"
    assert cache.kept_bytes == 0


def test_kept_re2_programs_stay_within_their_budget() -> None:
    budget = validation._COMPILED.maxsize
    for n in range(300):  # each program about 2,000 instructions: ~32 KB a pattern, ~9.6 MB in all
        text = {"type": "string", "pattern": f"^x{n}[a-z]{{1,1000}}$"}
        checker = validation.ArgumentValidator(
            {"type": "object", "properties": {"text": text}}, strict=False
        )
        assert checker.errors({"text": f"x{n}abc"}) == []
        assert checker.errors({"text": "nope"})[0].message.startswith("does not match")
        assert validation._COMPILED.currsize <= budget
    assert len(validation._COMPILED) < 300
