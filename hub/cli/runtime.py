"""Settings for a real run of a ``hub`` command: the environment plus, in development, the
generated secrets; configuration problems become one line on stderr and exit 2."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from hub.core.settings import Settings

__all__ = ["runtime_settings"]


def runtime_settings() -> Settings:
    """Settings for a real run: environment plus generated development secrets when allowed.

    JSON logging to stderr is configured first, so even the warning about generated secrets is a
    JSON line (stdout stays for what a command prints, e.g. the bootstrap key). Imported here:
    every ``hub`` command imports this module, the remote client's included, which reads no
    settings."""
    from hub.core.devsecrets import with_dev_secrets
    from hub.core.logging import configure_logging
    from hub.core.settings import ConfigError, get_settings

    try:
        settings = get_settings()
        configure_logging(settings.log_level)
        return with_dev_secrets(settings)
    except ConfigError as exc:
        typer.echo(f"hub: {exc}", err=True)
        raise typer.Exit(2) from None
