"""Running Alembic from code: the CLI, the app's tests and ``make lint`` all use these.

Migrations are the only way a schema is made. The scripts live in ``alembic/`` at the project
root (next to ``alembic.ini``); the database URL is passed explicitly.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ["alembic_config", "downgrade", "upgrade"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def alembic_config(url: str) -> Config:
    cfg = Config(str(PROJECT_ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(PROJECT_ROOT / "alembic"))
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate ``url`` up to ``revision`` (call from a thread with no running event loop)."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)
