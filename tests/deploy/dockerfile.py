"""A small reader of ``deploy/Dockerfile`` for structural tests: instructions grouped by stage.

Comments are dropped and continuation lines joined; each instruction keeps its keyword (upper case)
and its raw argument text. This is no Dockerfile parser for arbitrary input (hadolint is the
linter), only enough to ask what the hub's own file says.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Instruction", "Stage", "read_stages"]


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str

    def exec_form(self) -> list[str]:
        """The JSON (exec) form of CMD/ENTRYPOINT/HEALTHCHECK CMD arguments."""
        text = self.args
        if self.keyword == "HEALTHCHECK":
            text = text[text.index("CMD") + len("CMD") :]
        parsed = json.loads(text)
        assert isinstance(parsed, list)
        return [str(part) for part in parsed]

    def words(self) -> list[str]:
        return shlex.split(self.args)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def one(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert len(found) == 1, f"{keyword}: {found}"
        return found[0]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            for word in instruction.words():
                key, _, value = word.partition("=")
                values[key] = value
        return values


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    assert not current, "a continuation line ends the file"
    return lines


def read_stages(path: Path) -> list[Stage]:
    stages: list[Stage] = []
    for line in _logical_lines(path.read_text()):
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
            continue
        assert stages, f"{keyword} before FROM"
        stages[-1].instructions.append(Instruction(keyword, args.strip()))
    return stages
