"""What remote commands print: rich tables for people, ``--json`` for scripts, one-line errors.

Everything the hub returns may hold text a tenant (or an upstream MCP server, through a catalog)
chose, so every value printed in a table goes through :func:`safe`: control and format characters
(escape sequences, bidi overrides) are shown escaped and rich markup is never interpreted, so no
value can drive or fake the operator's terminal. ``--json`` output is ASCII-escaped JSON (the
same data, unambiguous, and just as safe to print). Progress and notes go to stderr, so stdout
carries only the answer (a key, a table, JSON) and pipes cleanly.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TextIO

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from hub.core.invisible import hidden

__all__ = [
    "Column",
    "Output",
    "fail",
    "note",
    "progress",
    "safe",
    "when",
]

Row = dict[str, Any]


def safe(value: Any, width: int | None = None) -> str:
    """``value`` as terminal-safe text: non-printable characters escaped, maybe shortened."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        text = ", ".join(safe(v) for v in value)
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=True, sort_keys=True)
    else:
        text = str(value)
    text = "".join(ascii(ch)[1:-1] if hidden(ch) else ch for ch in text)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def when(value: Any) -> str:
    """An ISO timestamp from the hub, to the second (``2026-12-01 09:50:40Z``)."""
    if not isinstance(value, str) or len(value) < 19:
        return safe(value)
    return value[:10] + " " + value[11:19] + "Z"


@dataclass(frozen=True)
class Column:
    """A table column: its header and how to get a cell from a row."""

    header: str
    get: Callable[[Row], Any]
    width: int | None = None

    @classmethod
    def of(cls, header: str, key: str, width: int | None = None) -> Column:
        return cls(header, lambda row: row.get(key), width)

    @classmethod
    def time(cls, header: str, key: str) -> Column:
        return cls(header, lambda row: when(row.get(key)))

    @classmethod
    def named(cls, header: str, key: str, names: dict[Any, Any]) -> Column:
        """A principal's (or credential's) id shown as its name, the id when it has none."""
        return cls(header, lambda row: names.get(row.get(key), row.get(key)))


#: the width a table is laid out in when it goes to a pipe or a file and ``COLUMNS`` is unset:
#: wide enough that no row folds, so each row stays one line for ``grep``, ``awk`` and ``cut``
PIPE_WIDTH = 1_000
#: a ``COLUMNS`` narrower than this is not believed (a table cannot be laid out in it)
MIN_WIDTH = 20


def _console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr), as wide as :func:`_width` says: in a pipe not rich's 80
    columns, which fold ids mid-value."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(
        stderr=stderr,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
        width=_width(stream),
    )


def _width(stream: TextIO) -> int:
    """``COLUMNS`` when it can lay a table out (0, 5 or junk printed nothing, or blank rows,
    and said nothing), else the terminal's width, else :data:`PIPE_WIDTH` for a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= MIN_WIDTH:
        return int(columns)
    if not stream.isatty():
        return PIPE_WIDTH
    try:
        return max(os.get_terminal_size(stream.fileno()).columns, MIN_WIDTH)
    except OSError:
        return PIPE_WIDTH


def note(message: str) -> None:
    """A line for the operator on stderr (stdout stays for the answer)."""
    typer.echo(message, err=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, then exit: never a traceback."""
    typer.echo(f"hub: {safe(message)}", err=True)
    raise typer.Exit(code)


class Output:
    """Prints an answer as JSON (``--json``) or as a table."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def json(self, data: Any) -> None:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=True, sort_keys=True))

    def table(self, rows: Sequence[Row], columns: Sequence[Column]) -> None:
        """``rows`` as a table (``--json``: the rows as a JSON array)."""
        if self.as_json:
            self.json(list(rows))
            return
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for column in columns:
            table.add_column(column.header, overflow="fold")
        for row in rows:
            table.add_row(*(Text(safe(c.get(row), c.width)) for c in columns))
        _console().print(table)
        if not rows:
            note("(none)")

    def record(self, data: Row, fields: Sequence[Column]) -> None:
        """One object as ``FIELD  value`` lines (``--json``: the object)."""
        if self.as_json:
            self.json(data)
            return
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        for field in fields:
            table.add_row(Text(field.header), Text(safe(field.get(data), field.width)))
        _console().print(table)

    def done(self, data: Any, message: str) -> None:
        """After a change: the object as JSON with ``--json``, else a one-line note."""
        if self.as_json:
            self.json(data)
        else:
            typer.echo(safe(message))


@contextlib.contextmanager
def progress(label: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while work runs (a pulsing bar when the total is unknown);
    ``update(done)`` moves it. Only drawn on a terminal: nothing when stderr is redirected."""
    if not sys.stderr.isatty():
        yield lambda _done: None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:>5.0f}" if total is None else "{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=_console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(safe(label), total=total)
        yield lambda done: bar.update(task, completed=done)
