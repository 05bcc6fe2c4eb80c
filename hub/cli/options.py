"""Options more than one ``hub`` command takes, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["HubCaOpt"]

HubCaOpt = Annotated[
    Path | None,
    typer.Option(
        "--hub-ca",
        exists=True,
        dir_okay=False,
        resolve_path=True,
        help="CA bundle (PEM) of a hub whose certificate a private CA issued.",
    ),
]
