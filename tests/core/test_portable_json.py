"""``hub.core.portable_json``: what ``json.loads`` takes and the hub could not write back."""

from __future__ import annotations

import json

import pytest

from hub.core import portable_json
from hub.core.portable_json import NotPortableJson, holds_nul, loads, nul_replaced

SECRET = "s3cr3t-in-the-body"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"a": NaN}', "non_finite_number"),
        ('{"a": -Infinity}', "non_finite_number"),
        ('{"a": 1e309}', "non_finite_number"),
        ("[" + "9" * 400 + ".0]", "non_finite_number"),
        ('{"a": "\\udfff"}', "lone_surrogate"),
        ('{"\\ud800": 1}', "lone_surrogate"),
        ('{"a": "\\ude00\\ud83d"}', "lone_surrogate"),  # a pair in the wrong order is two halves
        ("[[[1]]]", "too_deep"),
        ("[" * 100_000 + "]" * 100_000, "too_deep"),
        (f'{{"a": "{SECRET}"', "not_json"),
        (b'{"a": "\xff"}', "not_json"),
    ],
)
def test_refused_with_a_reason_that_quotes_nothing(raw: str | bytes, reason: str) -> None:
    with pytest.raises(NotPortableJson) as refused:
        loads(raw, max_depth=2)
    assert refused.value.reason == reason
    assert str(refused.value) == portable_json.REASONS[reason]
    error = refused.value  # nothing chained to it holds the decoder's error, which quotes input
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__


@pytest.mark.parametrize("raw", ['{"a": "\\ud83d"}', b'{"\\uDC00": ["\\ud800x"]}'])
def test_lone_surrogates_may_be_replaced_instead(raw: str | bytes) -> None:
    value = loads(raw, max_depth=8, surrogates="replace")
    assert "\ufffd" in json.dumps(value, ensure_ascii=False)
    json.dumps(value, ensure_ascii=False).encode()  # writable as UTF-8 now


def test_what_is_json_reads_as_json_loads_reads_it() -> None:
    raw = '{"pair": "\\ud83d\\ude00", "tiny": 1e-400, "big": 1.7e308, "int": 1' + "0" * 300 + "}"
    assert loads(raw, max_depth=1) == json.loads(raw)
    assert loads(raw.encode(), max_depth=1) == json.loads(raw)
    assert loads('"\\\\ud800"', max_depth=1) == "\\ud800"  # an escaped backslash, not an escape


def test_nul_is_found_and_replaced_in_keys_and_values_at_any_depth() -> None:
    deep: object = "x"
    for _ in range(5_000):
        deep = [deep]
    assert not holds_nul(deep)
    assert holds_nul([deep, {"k": ["a\x00"]}])
    assert holds_nul({"k\x00": 1})
    assert nul_replaced({"k\x00": ["a\x00b", 1, None]}) == {"k\ufffd": ["a\ufffdb", 1, None]}


@pytest.mark.parametrize("number", [10**400, -(10**309), 2**1024, int("18" + "0" * 307)])
def test_an_integer_past_a_double_is_refused_as_1e400_is(number: int) -> None:
    """A JavaScript server reads it as Infinity; an approver would see its digits (stop 50)."""
    with pytest.raises(NotPortableJson) as refused:
        loads(json.dumps({"n": number}), max_depth=2)
    assert refused.value.reason == "non_finite_number"
    with pytest.raises(NotPortableJson):
        portable_json.check({"n": [number]}, max_depth=3)
    assert loads(json.dumps({"n": int("17" + "0" * 307)}), max_depth=2)  # 1.7e308: a double


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"a": [1.0, float("nan")]}, "non_finite_number"),
        ({"a": {"b": float("-inf")}}, "non_finite_number"),
        ({"a": "\udfff"}, "lone_surrogate"),
        ({"\ud800": 1}, "lone_surrogate"),
        ({"a": [[1]]}, "too_deep"),
    ],
)
def test_a_leniently_parsed_value_is_checked_as_loads_would(value: object, reason: str) -> None:
    with pytest.raises(NotPortableJson) as refused:
        portable_json.check(value, max_depth=2)
    assert refused.value.reason == reason
    with pytest.raises(NotPortableJson):  # the same text through the strict parse
        loads(json.dumps(value), max_depth=2)


def test_a_portable_value_passes_the_check() -> None:
    value = {"a": [1.5, -0.0, 10**300, -(2**1023), "é\U0001f600", "a\x00b", True, None]}
    portable_json.check(value, max_depth=2)
    assert loads(json.dumps(value), max_depth=2) == value
