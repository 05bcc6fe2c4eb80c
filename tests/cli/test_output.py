"""What the remote commands print when stdout is a pipe: one line per row, whatever the width."""

from __future__ import annotations

import pytest

from hub.cli.remote.output import Column, Output

ID = "2bace77d-7054-465d-a33b-5d77a91cee37"
COLUMNS = [
    Column("ID", lambda row: row["id"]),
    Column("RESOURCE", lambda row: row["resource"]),
    Column("DESCRIPTION", lambda row: row["description"]),
]
ROW = {"id": ID, "resource": "tool:github.delete_repo", "description": "word " * 30}


def test_a_table_in_a_pipe_keeps_each_row_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    Output(as_json=False).table([ROW, {**ROW, "id": ID[::-1]}], COLUMNS)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert lines[0].split() == ["ID", "RESOURCE", "DESCRIPTION"]
    rows = [line for line in lines if ID in line or ID[::-1] in line]
    assert len(rows) == 2  # every id whole, on its row's one line
    assert all(
        "tool:github.delete_repo" in line and line.rstrip().endswith("word") for line in rows
    )


def test_a_record_in_a_pipe_keeps_each_value_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    Output(as_json=False).record(ROW, COLUMNS)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(lines) == 3
    assert lines[0].split() == ["ID", ID]


def test_columns_still_sets_the_width(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``COLUMNS`` is the operator's choice (and a terminal's width is rich's to find)."""
    monkeypatch.setenv("COLUMNS", "60")
    Output(as_json=False).table([ROW], COLUMNS)
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 60
    assert not any(ID in line for line in lines)  # folded to fit
