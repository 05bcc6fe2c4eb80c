"""Path ids: the canonical spelling is recognised by a pattern, exactly as a parse and a print
of the UUID would recognise it."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.core.errors import NotFound
from hub.core.paths import is_canonical_id, parse_id


def _by_round_trip(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@given(st.uuids())
def test_every_canonical_spelling_is_an_id(value: uuid.UUID) -> None:
    assert is_canonical_id(str(value))
    assert parse_id(str(value)) == value


HEX_ISH = st.text(alphabet="0123456789abcdefABCDEF-{}:urnid \n", max_size=45)


@given(st.one_of(HEX_ISH, st.text(max_size=40), st.uuids().map(lambda u: u.hex)))
def test_the_pattern_agrees_with_a_parse_and_a_print(value: str) -> None:
    assert is_canonical_id(value) == _by_round_trip(value)


@pytest.mark.parametrize(
    "other",
    [
        "3F2504E0-4F89-11D3-9A0C-0305E82C3301",  # upper case
        "3f2504e04f8911d39a0c0305e82c3301",  # no hyphens
        "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        "urn:uuid:3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301\n",
        " 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3f2504e0-4f89-11d3-9a0c-0305e82c330",
        "\uff13f2504e0-4f89-11d3-9a0c-0305e82c3301",  # a full-width digit
    ],
)
def test_other_spellings_read_as_absent(other: str) -> None:
    assert not is_canonical_id(other)
    with pytest.raises(NotFound):
        parse_id(other)
