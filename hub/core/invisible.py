"""Characters a reader cannot see, or that change how the text around them reads.

A person deciding on what a tool call will do (the console's approval page, ``hub approvals
show``) or telling two names apart must see every character that matters. ``str.isprintable``
and the Unicode general categories alone miss some: variation selectors and the other
default-ignorable code points are marks or letters (``U+E0100`` is ``Mn``, the Hangul filler
``U+3164`` is ``Lo``), and blanks other than the ASCII space look like one. The standard library
has no ``Default_Ignorable_Code_Point`` property, so its ranges (Unicode 15.1,
``DerivedCoreProperties.txt``) are listed here; a table from a package would be one more
dependency for thirty ranges.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right

__all__ = ["escaped", "hidden", "shown"]

# control, format (bidirectional overrides, zero-width), separators, private use, surrogates,
# unassigned; "Zs" (a blank other than U+0020) looks like a space and may not be one
_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Co", "Cs", "Cn"})

# Default_Ignorable_Code_Point, and U+2800 (a braille pattern with no dots: a blank that is "So")
_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_STARTS = tuple(start for start, _ in _RANGES)


def hidden(char: str) -> bool:
    """Whether ``char`` (one code point) is invisible, blank-looking or reorders text.

    The ASCII space is not hidden; every other blank is."""
    code = ord(char)
    if 0x20 <= code <= 0x7E:
        return False
    if unicodedata.category(char) in _CATEGORIES:
        return True
    at = bisect_right(_STARTS, code) - 1
    return at >= 0 and code <= _RANGES[at][1]


def escaped(char: str) -> str:
    """``char`` as a JSON escape (``\\uXXXX``, a surrogate pair above U+FFFF)."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def shown(text: str) -> str:
    """``text`` with every :func:`hidden` character written as its ``\\uXXXX`` escape."""
    return "".join(escaped(c) if hidden(c) else c for c in text)
