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
