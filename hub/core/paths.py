"""Object ids in paths: one canonical spelling, everything else reads as 404 (DESIGN §8, §13).

An id is the lower-case hyphenated UUID (``str(uuid.UUID(...))``). ``uuid.UUID`` also accepts
upper case, no hyphens, braces and ``urn:uuid:``; if those reached a grant decision the resource
checked (``credential:<raw text>``) would differ from the object looked up, and an item-level deny
would not apply. So every path id goes through :func:`parse_id` (or :func:`canonical_id`), which
refuses any other spelling as 404 — before the route's authorisation runs — and the decision is
always taken on the canonical text.

A tenant may also be named by its slug wherever a path has ``{t}`` (DESIGN §14). Slugs can never
parse as a UUID (:func:`slug_problem`), so a ``{t}`` is either a canonical id, a slug, or 404 —
never ambiguous, and a non-canonical spelling of an id is never mistaken for a slug.
"""

from __future__ import annotations

import re
import uuid

from hub.core.errors import NotFound

__all__ = [
    "HANDLE_PATTERN",
    "HANDLE_RE",
    "SLUG_PATTERN",
    "canonical_handle",
    "canonical_id",
    "is_canonical_id",
    "is_handle",
    "is_slug",
    "parse_id",
    "parses_as_uuid",
    "slug_problem",
]

#: A server handle: lower case, digits, ``_`` and ``-``, no dots (so ``tool:<handle>.*`` can
#: never cover another server's tools). Handles are their own canonical spelling.
HANDLE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
HANDLE_RE = re.compile(HANDLE_PATTERN)

#: A tenant slug: lower case, digits and ``-``; one that would parse as a UUID is refused too.
SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
_SLUG = re.compile(SLUG_PATTERN)


#: An id as ``str(uuid.UUID(…))`` spells it: lower-case hex, hyphenated 8-4-4-4-12. Every such
#: string is a UUID spelt canonically and no other string is (``tests/core/test_paths.py``); a
#: pattern is checked on every request path, a parse and a print cost seven times as much.
_CANONICAL_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_canonical_id(value: str) -> bool:
    return _CANONICAL_ID.fullmatch(value) is not None


def parse_id(value: str) -> uuid.UUID:
    """A path id in its canonical spelling; any other text reads as 404, like an absent id."""
    if not is_canonical_id(value):
        raise NotFound()
    return uuid.UUID(value)


def canonical_id(value: str) -> str:
    """``value`` if it is a canonical id (the text a grant decision is taken on), else 404."""
    return str(parse_id(value))


def is_handle(value: str) -> bool:
    return HANDLE_RE.fullmatch(value) is not None


def canonical_handle(value: str) -> str:
    """``value`` if it can be a handle, else 404 (no handle is spelt any other way)."""
    if not is_handle(value):
        raise NotFound()
    return value


def parses_as_uuid(value: str) -> bool:
    """Whether ``uuid.UUID`` accepts ``value`` in any of its spellings (hyphens anywhere, braces,
    ``urn:uuid:``, upper case)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def slug_problem(value: str) -> str | None:
    """Why ``value`` cannot be a tenant slug, or None. A slug that parses as a UUID is refused:
    ``{t}`` takes a slug or an id, and must never be able to mean both."""
    if not _SLUG.fullmatch(value):
        return "slug must be 1-63 of a-z, 0-9 and '-', starting with a letter or digit"
    if parses_as_uuid(value):
        return "slug must not look like a UUID (a tenant path names a tenant by slug or by id)"
    return None


def is_slug(value: str) -> bool:
    return slug_problem(value) is None
