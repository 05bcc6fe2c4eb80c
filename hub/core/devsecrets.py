"""Development secrets: generated once under the data directory when none are configured.

``make run`` must work on a fresh machine with nothing configured, yet the hub never runs without
an encryption keyring and an API-key pepper. In ``development`` only, a missing keyring or pepper
is read from ``<data_dir>/dev-secrets.json``, which is created (mode 0600) with fresh random values
the first time, with a loud warning. ``production`` never reads or writes this file.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
from pathlib import Path

from pydantic import SecretStr

from hub.core.settings import ConfigError, Settings

__all__ = ["DEV_SECRETS_FILE", "with_dev_secrets"]

log = logging.getLogger("hub.devsecrets")

DEV_SECRETS_FILE = "dev-secrets.json"


def _generate() -> dict[str, str]:
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    return {
        "encryption_keys": f"dev1:{key}",
        "active_key_id": "dev1",
        "api_key_pepper": secrets.token_urlsafe(48),
    }


def _load_or_create(path: Path) -> dict[str, str]:
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            raise ConfigError(f"{path} is not readable JSON; delete it to regenerate") from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise ConfigError(f"{path} has an unexpected shape; delete it to regenerate")
        return data
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _generate()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)
    log.warning(
        "GENERATED DEVELOPMENT SECRETS in %s (mode 0600): an encryption keyring and an API-key "
        "pepper for local use only. Set HUB_ENCRYPTION_KEYS and HUB_API_KEY_PEPPER for anything "
        "else; production refuses generated secrets.",
        path,
    )
    return data


def with_dev_secrets(settings: Settings) -> Settings:
    """Fill a development configuration's missing keyring and pepper from the generated file."""
    if settings.env == "production":
        return settings
    if settings.encryption_keys is not None and settings.api_key_pepper is not None:
        return settings
    data = _load_or_create(settings.data_dir / DEV_SECRETS_FILE)
    update: dict[str, object] = {"secrets_generated": True}
    if settings.encryption_keys is None:
        update["encryption_keys"] = SecretStr(data["encryption_keys"])
        if settings.active_key_id is None:
            update["active_key_id"] = data.get("active_key_id")
    if settings.api_key_pepper is None:
        update["api_key_pepper"] = SecretStr(data["api_key_pepper"])
    return settings.model_copy(update=update)
