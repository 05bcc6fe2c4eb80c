"""Every setting the hub reads is in the README's configuration table, and nothing else is."""

from __future__ import annotations

import re
from pathlib import Path

from hub.core.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"
#: set by the hub itself when it generated development secrets (``hub.core.devsecrets``), so
#: that production refuses them; not an operator's setting
INTERNAL = {"HUB_SECRETS_GENERATED"}


def _documented() -> list[str]:
    text = README.read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (`HUB_[^|]+) \|", section, re.MULTILINE)
    return [name for row in rows for name in re.findall(r"`(HUB_[A-Z0-9_]+)`", row)]


def test_the_readme_lists_every_setting_once_and_no_other() -> None:
    read = {f"HUB_{name.upper()}" for name in Settings.model_fields} - INTERNAL
    documented = _documented()
    assert sorted(documented) == sorted(set(documented)), "a setting is listed twice"
    assert set(documented) == read
