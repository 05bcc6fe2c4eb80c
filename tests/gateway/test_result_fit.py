"""A result over ``HUB_MAX_TOOL_RESULT_BYTES`` is cut to fit in one pass over its blocks (stop 43).

The cut serialised the result kept so far once for every block, quadratic in the blocks: a
1.26 MB result of 100-character text blocks took 24 s of the event loop, and an upstream may send
4 MiB. The time bound below is one-sided and generous for what now takes milliseconds.
"""

from __future__ import annotations

import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.gateway.engine.shaping import TRUNCATED_META, fit, size_of

MIB = 1024 * 1024


def _texts(result: dict[str, Any]) -> list[str]:
    return [b["text"] for b in result["content"] if isinstance(b.get("text"), str)]


def _check(original: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """What every cut must be: within the bound, the text blocks in order, each whole but the
    last, which may be a prefix; and no room left for the next whole block."""
    shaped = fit(original, max_bytes, has_output_schema=False)
    if size_of(original) <= max_bytes:
        assert shaped == original
        return shaped
    assert size_of(shaped) <= max_bytes
    assert shaped["_meta"][TRUNCATED_META] == {"original_bytes": size_of(original)}
    kept, texts = _texts(shaped), _texts(original)
    assert all(b["type"] == "text" for b in shaped["content"])
    if kept:
        assert kept[:-1] == texts[: len(kept) - 1]
        assert texts[len(kept) - 1].startswith(kept[-1])
    whole = len(kept) if not kept or kept[-1] == texts[len(kept) - 1] else len(kept) - 1
    if whole < len(texts):  # the first text block not kept whole would not have fit whole
        after = [b for b in original["content"] if isinstance(b.get("text"), str)][whole]
        unmarked = {**original, "content": [*shaped["content"][:whole], after]}
        assert size_of(unmarked) > max_bytes - 96  # the room the marker leaves
    return shaped


def test_many_small_blocks_are_cut_in_one_pass() -> None:
    original = {"content": [{"type": "text", "text": f"{i:>99}"} for i in range(10_000)]}
    started = time.monotonic()
    shaped = fit(original, MIB, has_output_schema=False)
    assert time.monotonic() - started < 1.5
    assert 8_000 < len(shaped["content"]) < 10_000
    assert _check(original, MIB) == shaped


BLOCK = st.one_of(
    st.builds(
        lambda text: {"type": "text", "text": text},
        st.text(alphabet=st.sampled_from('ab"\\\n\x01é😀'), max_size=40),
    ),
    st.builds(
        lambda data: {"type": "image", "mimeType": "image/png", "data": data},
        st.text("A", max_size=30),
    ),
    st.just({"type": "text", "text": 7}),  # not a string: dropped like a non-text block
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(BLOCK, max_size=12),
    st.dictionaries(st.sampled_from(["example.com/k"]), st.text(max_size=5), max_size=1),
    st.integers(150, 500),
)
def test_every_cut_fits_and_keeps_a_prefix(
    blocks: list[dict[str, Any]], meta: dict[str, Any], max_bytes: int
) -> None:
    original: dict[str, Any] = {"content": blocks}
    if meta:
        original["_meta"] = meta
    _check(original, max_bytes)


# The block cut short kept half the bytes left (``room // 2``, against escapes that may
# double a character or more), so a 3,000,000-character text came back as 524,318 bytes under a
# 1 MiB cap. The cut now measures the escaped text: what is kept is as close to the cap as whole
# characters allow, and never over it. The fractions below are correctness bounds, not timings.


def _kept_bytes(original: dict[str, Any], max_bytes: int) -> int:
    shaped = _check(original, max_bytes)
    return size_of(shaped)


def test_a_long_plain_text_is_cut_to_the_cap_not_half_of_it() -> None:
    original = {"content": [{"type": "text", "text": "a" * 3_000_000}]}
    assert 0.99 * MIB <= _kept_bytes(original, MIB) <= MIB


def test_a_text_of_six_byte_escapes_is_cut_under_the_cap() -> None:
    """``\\u0001`` is six bytes for one character: the halving's worst case, and the cut's."""
    for text in ("\x01" * 400_000, "\x01a" * 300_000, "é\x1f😀" * 200_000):
        original = {"content": [{"type": "text", "text": text}]}
        assert MIB - 6 <= _kept_bytes(original, MIB) <= MIB


def test_a_cut_ends_on_a_whole_escape() -> None:
    """Every cut position through quotes, backslashes and control characters: never over the
    cap, never a broken escape, and within one character's escape of the cap."""
    original = {"content": [{"type": "text", "text": 'x\\"\n\x01\\\\u0041\\u' * 8}]}
    for max_bytes in range(150, size_of(original)):
        assert max_bytes - 6 <= _kept_bytes(original, max_bytes) <= max_bytes


def test_a_cut_keeps_grapheme_clusters_whole() -> None:
    for unit in ("e\u0301", "👩\u200d💻", "🇫🇷", "\r\n", "👍🏽"):
        original = {"content": [{"type": "text", "text": unit * 2_000}]}
        for max_bytes in range(1024, 1024 + 24):
            kept = _texts(_check(original, max_bytes))[-1]
            assert kept == unit * (len(kept) // len(unit))
            one_more = {
                "content": [{"type": "text", "text": kept + unit}],
                "_meta": {TRUNCATED_META: {"original_bytes": size_of(original)}},
            }
            assert size_of(one_more) > max_bytes  # the next whole cluster would not fit


def test_mixed_blocks_are_cut_to_the_cap() -> None:
    original: dict[str, Any] = {
        "content": [
            {"type": "text", "text": "a" * 300_000},
            {"type": "image", "mimeType": "image/png", "data": "A" * 200_000},
            {"type": "text", "text": 'q"\\\n' * 100_000, "_meta": {"example.com/k": "v"}},
            {"type": "text", "text": 7},
            {"type": "text", "text": "é\x01" * 300_000},
            {"type": "text", "text": "never reached"},
        ],
        "isError": True,
        "_meta": {"example.com/k": "v"},
    }
    shaped = _check(original, MIB)
    assert MIB - 6 <= size_of(shaped) <= MIB
    assert shaped["isError"] is True
    assert shaped["_meta"]["example.com/k"] == "v"
    assert [len(b["text"]) for b in shaped["content"][:2]] == [300_000, 400_000]
    assert 0 < len(shaped["content"][2]["text"]) < 600_000
    assert len(shaped["content"]) == 3


def test_structured_content_under_an_output_schema_is_kept_and_the_text_cut_to_the_cap() -> None:
    original = {
        "content": [{"type": "text", "text": "a" * 2_000_000}],
        "structuredContent": {"rows": ["b" * 100] * 1_000},
    }
    shaped = fit(original, MIB, has_output_schema=True)
    assert shaped["structuredContent"] == original["structuredContent"]
    assert MIB - 6 <= size_of(shaped) <= MIB
