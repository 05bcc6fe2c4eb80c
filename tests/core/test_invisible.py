"""Characters a person cannot see are shown escaped wherever a person decides on text: the
console's approval page and tool texts, and the CLI's tables (stop 50: variation selectors that
encode ``; rm -rf /`` after ``"/safe"``, a Hangul filler and a no-break space were shown raw)."""

from __future__ import annotations

import json

import pytest

from hub.cli.mcp import _safe as mcp_safe
from hub.cli.remote.output import safe
from hub.console.web import exact_json, preview, visible
from hub.core.invisible import hidden, shown

HIDDEN = [
    "\u00a0",  # no-break space (Zs)
    "\u2000",  # en quad (Zs)
    "\u3000",  # ideographic space (Zs)
    "\u00ad",  # soft hyphen (Cf)
    "\u034f",  # combining grapheme joiner (Mn, default-ignorable)
    "\u115f",  # Hangul choseong filler (Lo, default-ignorable)
    "\u3164",  # Hangul filler (Lo)
    "\uffa0",  # halfwidth Hangul filler (Lo)
    "\u180b",  # Mongolian free variation selector (Mn)
    "\u200b",  # zero-width space (Cf)
    "\u202e",  # right-to-left override (Cf)
    "\u2800",  # braille pattern blank (So)
    "\ufe0f",  # variation selector 16 (Mn)
    "\U000e0100",  # variation selector 17 (Mn)
    "\U000e0041",  # tag latin capital A (Cf)
    "\x00",
    "\n",
    "\x7f",
]
SHOWN = [" ", "a", "~", "é", "e\u0301", "ß", "中", "я", "\U0001f600", "\u05d0", "\u0627"]


@pytest.mark.parametrize("char", HIDDEN)
def test_invisible_characters_are_hidden(char: str) -> None:
    assert all(hidden(c) for c in char)


@pytest.mark.parametrize("text", SHOWN)
def test_visible_text_is_not(text: str) -> None:
    assert not any(hidden(c) for c in text.replace("\u0301", ""))
    assert shown(text.replace("\u0301", "")) == text.replace("\u0301", "")


def test_the_console_and_the_cli_escape_what_would_hide_an_argument() -> None:
    smuggled = "".join(chr(0xE0100 + b) for b in b"; rm -rf /")
    path = f"/safe{smuggled}\u3164\u00a0\u2800\ufe0f\u034f"
    arguments = {"path": path}
    page = exact_json(arguments)
    assert json.loads(page) == arguments  # the escapes mean the same JSON
    assert not any(hidden(c) for c in page if c not in "\n ")
    assert "\\udb40\\udd3b" in page  # U+E013B, the ";", as its surrogate pair
    for text in (visible(path), preview(arguments), safe(path), mcp_safe(path)):
        assert "/safe\\" in text
        assert not any(hidden(c) for c in text), text
    assert len(visible(path)) > 15 * 6  # every one of the fifteen hidden characters spelt out
