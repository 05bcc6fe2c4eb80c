"""The names people give principals, credentials and deployments (DESIGN §14).

A name is what a person reads in a table, an approval or an audit row, and what the CLI and the
console look an object up by wherever they also take its id (``hub principals show NAME|ID``).
So a name must read as what it is and never be taken for something else:

- not blank, and no leading or trailing whitespace (two names that print alike must be alike);
- not ``.`` or ``..`` (a path step, wherever a name ends up in a path or a file name);
- no character :func:`hub.core.invisible.hidden` finds: controls, bidirectional overrides,
  zero-width and other default-ignorable characters, blanks other than the ASCII space — each
  makes a name read other than it is;
- not UUID-shaped in any spelling ``uuid.UUID`` accepts: a lookup by name or id would take it for
  an id, and could show another object (as slugs, :func:`hub.core.paths.slug_problem`).

Only new names are checked (create, or a rename): rows stored before are read as they are.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from hub.core.invisible import escaped, hidden
from hub.core.paths import parses_as_uuid

__all__ = ["MAX_NAME", "Name", "name_problem"]

#: the longest name (the columns are ``String(200)``)
MAX_NAME = 200


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name, or None."""
    if not value.strip():
        return "name must not be empty or only blanks"
    found = next((char for char in value if hidden(char)), None)
    if found is not None:
        return (
            "name must not contain control, invisible, blank-looking or text-reordering "
            f"characters (found {escaped(found)})"
        )
    if value != value.strip():
        return "name must not start or end with a space"
    if value in (".", ".."):
        return "name must not be '.' or '..'"
    if parses_as_uuid(value):
        return "name must not look like a UUID (where a name or an id is taken, it reads as an id)"
    return None


def _check(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


#: A name of a principal, credential or deployment in a request body.
Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME,
        description="1-200 characters; not '.', '..', blank, UUID-shaped, padded with spaces, "
        "or holding control, invisible or text-reordering characters",
    ),
    AfterValidator(_check),
]
