"""An argument check costs work linear in the arguments, whatever the tool's schema (stop 43).

jsonschema compared ``uniqueItems`` items pairwise when they cannot be sorted (4,000 objects: 14 s
of the event loop), and a recursive ``oneOf`` doubles its work at each level of the arguments (16
levels: 3 s). Each case below takes minutes without the fix; the time bounds are one-sided and
generous, for a check that takes milliseconds with it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft202012Validator

from hub.gateway.engine.validation import TOO_COSTLY, ArgumentError, ArgumentValidator
from hub.gateway.engine.validation_cost import (
    BASE_STEPS,
    OFF_LOOP_VALUES,
    STEPS_PER_VALUE,
    Budget,
    TooCostly,
    more_values_than,
)
from tests.gateway.costly import RECURSIVE_ONE_OF, nested
from tests.support.ticks import ticks_while

#: one-sided and generous (a loaded two-core CI machine took 2.3 s once): the pairwise
#: comparison it replaced took 14 s for 4,000 objects, and grows with the square of the count
BOUND_S = 6.0


def _unique(items_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    array: dict[str, Any] = {"type": "array", "uniqueItems": True}
    if items_schema is not None:
        array["items"] = items_schema
    return {"type": "object", "properties": {"a": array}}


def _timed(schema: dict[str, Any], arguments: Any) -> tuple[list[ArgumentError], float]:
    validator = ArgumentValidator(schema, strict=True)
    started = time.monotonic()
    errors = validator.errors(arguments)
    return errors, time.monotonic() - started


@pytest.mark.parametrize(
    "items",
    [
        [{"k": i} for i in range(6_000)],  # objects never sort
        ["first", *range(6_000)],  # a string among numbers does not sort
        [[i, "x"] for i in range(6_000)],  # neither do arrays of mixed items
    ],
    ids=["objects", "mixed-scalars", "mixed-arrays"],
)
def test_unique_items_takes_one_pass(items: list[Any]) -> None:
    errors, elapsed = _timed(_unique(), {"a": items})
    assert errors == []
    assert elapsed < BOUND_S
    repeated, elapsed = _timed(_unique(), {"a": [*items, items[-1]]})
    assert elapsed < BOUND_S
    assert repeated == [
        ArgumentError(
            "$.a", f"has non-unique elements (item {len(items)} repeats item {len(items) - 1})"
        )
    ]


#: few values, so that arrays of them repeat often; each is some other one's near miss
SCALARS = st.sampled_from([None, True, False, 0, 1, 0.0, 1.0, 2.5, "", "1", "a"])
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=4,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(SCALARS | JSON, max_size=6))
@example([True, 1])
@example([0, False])
@example([1, 1.0])
@example([[1], [True]])
@example([{"a": 1, "b": 2}, {"b": 2, "a": 1}])
@example([{"a": [True]}, {"a": [1.0]}])
def test_unique_items_agrees_with_jsonschema(items: list[Any]) -> None:
    """``true`` is not ``1``, ``1`` is ``1.0``, keys are unordered, arrays are ordered: whatever
    the library's own keyword says about an array, the one-pass keyword says too."""
    for library in (Draft202012Validator, Draft4Validator):
        schema = {"type": "array", "uniqueItems": True}
        expected = library(schema).is_valid(items)
        got = ArgumentValidator({"type": "object", "properties": {"a": schema}}, strict=True)
        assert (got.errors({"a": items}) == []) is expected, items


UNEVALUATED = {
    "type": "object",
    "$defs": {
        "node": {
            "type": "object",
            "anyOf": [{"properties": {"a": {"$ref": "#/$defs/node"}}}],
            "unevaluatedProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}


@pytest.mark.parametrize(
    "schema", [RECURSIVE_ONE_OF, UNEVALUATED], ids=["oneOf", "unevaluatedProperties"]
)
def test_exponential_work_is_cut_off(schema: dict[str, Any]) -> None:
    errors, elapsed = _timed(schema, nested(24))  # 2**24 times a level's work, unbounded
    assert errors == [ArgumentError("$", TOO_COSTLY)]
    assert elapsed < BOUND_S
    shallow, _ = _timed(schema, nested(4))  # the same schema, arguments it can afford
    assert shallow == []


def test_large_arguments_with_an_ordinary_schema_still_pass() -> None:
    """The budget grows with the arguments: 20,000 objects checked against a ``oneOf`` of four
    object shapes (about 8 keyword evaluations a value) are far past the base and still pass."""
    shapes = [
        {
            "type": "object",
            "properties": {"kind": {"const": kind}, "x": {"type": "integer"}},
            "required": ["kind", "x"],
            "additionalProperties": False,
        }
        for kind in "abcd"
    ]
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"oneOf": shapes}}},
    }
    arguments = {"items": [{"kind": "d", "x": i} for i in range(20_000)]}
    assert ArgumentValidator(schema, strict=True).errors(arguments) == []
    arguments["items"][-1] = {"kind": "e", "x": 1}
    errors = ArgumentValidator(schema, strict=True).errors(arguments)
    assert [e.path for e in errors] == ["$.items[19999]"]


def test_the_budget_counts_the_arguments_once_and_only_when_the_base_runs_out() -> None:
    budget = Budget({"a": [1, 2, {"b": None}]})  # 6 values
    budget.left = -1
    budget.overdrawn()
    assert budget.counted
    assert budget.left == 6 * STEPS_PER_VALUE - 1
    budget.left = -1
    with pytest.raises(TooCostly):
        budget.overdrawn()
    assert Budget(None).left == BASE_STEPS


async def test_large_arguments_are_checked_off_the_event_loop() -> None:
    """A 2.3 MB array of integers took 4.2 s to check, the loop every tenant's requests share
    stalled for all of it (stop 44). Checked on the checking thread, the loop goes on: a task
    that wakes every 5 ms runs many times during the check, where it ran at most once before."""
    schema = {
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
    }
    validator = ArgumentValidator(schema, strict=True)
    xs: list[Any] = list(range(100_000))
    started = time.monotonic()
    errors, ticks = await ticks_while(validator.check({"xs": xs}))
    elapsed = time.monotonic() - started
    assert errors == []
    assert ticks >= 5, (ticks, elapsed)
    # the same answers as on the loop, errors and paths included
    xs[70_000] = "seventy thousand"
    errors, _ = await ticks_while(validator.check({"xs": xs, "extra": 1}))
    assert errors == validator.errors({"xs": xs, "extra": 1})
    assert [e.path for e in errors] == ["$.extra", "$.xs[70000]"]


async def test_small_arguments_are_checked_on_the_loop() -> None:
    """A check of a few values takes microseconds; a thread hop would cost more than it."""
    validator = ArgumentValidator(_unique(), strict=True)
    arguments = {"a": list(range(OFF_LOOP_VALUES - 2))}  # the object, the array, its items
    _, ticks = await ticks_while(validator.check(arguments))
    assert ticks == 0
    assert not more_values_than(arguments, OFF_LOOP_VALUES)
    assert more_values_than({"a": [*arguments["a"], 0]}, OFF_LOOP_VALUES)


def test_counting_values_stops_at_the_limit() -> None:
    huge = [[0] * 1000] * 10_000  # ten million values, shared rows
    started = time.monotonic()
    assert more_values_than(huge, OFF_LOOP_VALUES)
    assert time.monotonic() - started < 1.5  # counting all ten million takes several seconds
    assert not more_values_than({"a": [1, {"b": None}]}, 5)  # 5 values
    assert more_values_than({"a": [1, {"b": None}]}, 4)
