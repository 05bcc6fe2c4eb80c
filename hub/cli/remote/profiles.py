"""Login profiles of the remote client: where a hub is and the key to use with it.

A profile is a name (``default`` unless ``--profile`` says otherwise) with the hub's URL, an
optional private CA file and an optional default tenant, kept in ``profiles.json`` under
``$XDG_CONFIG_HOME/mcp-hub/`` (``~/.config/mcp-hub/`` without it). Nothing secret is in that file.
The API key of each profile is the only secret, in a file of its own, ``keys/<profile>``, created
0600 in a 0700 directory, written atomically and never readable by others even for an instant.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_PROFILE",
    "Profile",
    "ProfileError",
    "config_dir",
    "delete_profile",
    "load_key",
    "load_profile",
    "save_profile",
]

DEFAULT_PROFILE = "default"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ProfileError(Exception):
    """A profile cannot be used (absent, malformed, unreadable key); the message says what to do."""


@dataclass(frozen=True)
class Profile:
    """Where one hub is: its URL, a CA bundle for a private CA, the tenant commands default to."""

    name: str
    url: str
    hub_ca: str | None = None
    tenant: str | None = None


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/mcp-hub`` or ``~/.config/mcp-hub`` (the XDG base directory rule)."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "mcp-hub"


def _check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ProfileError("a profile name is 1-64 of letters, digits, '.', '_' and '-'")
    return name


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a 0600 file, atomically (a temporary file made 0600, then
    renamed over the old one), in a 0700 directory."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _profiles_file() -> Path:
    return config_dir() / "profiles.json"


def _key_file(name: str) -> Path:
    return config_dir() / "keys" / _check_name(name)


def _read_all() -> dict[str, Any]:
    path = _profiles_file()
    if not path.exists():
        return {"profiles": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ProfileError(f"{path} cannot be read ({type(exc).__name__}); log in again") from None
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise ProfileError(f"{path} is not a profiles file; log in again")
    return data


def load_profile(name: str = DEFAULT_PROFILE) -> Profile:
    entry = _read_all()["profiles"].get(_check_name(name))
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        hint = "" if name == DEFAULT_PROFILE else f" --profile {name}"
        raise ProfileError(f"not logged in (run: hub login --url URL{hint})")
    return Profile(
        name=name,
        url=entry["url"],
        hub_ca=entry.get("hub_ca") if isinstance(entry.get("hub_ca"), str) else None,
        tenant=entry.get("tenant") if isinstance(entry.get("tenant"), str) else None,
    )


def load_key(name: str = DEFAULT_PROFILE) -> str:
    path = _key_file(name)
    try:
        mode = path.stat().st_mode & 0o777
        key = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ProfileError(f"no key for profile {name!r} (run: hub login)") from None
    except OSError as exc:
        raise ProfileError(f"{path} cannot be read ({exc.strerror})") from None
    if mode & 0o077:
        raise ProfileError(f"{path} is readable by others (mode {mode:o}); chmod 600 it")
    if not key:
        raise ProfileError(f"{path} is empty (run: hub login)")
    return key


def save_profile(profile: Profile, key: str | None) -> Path:
    """Store ``profile`` (and its key, when given); returns the key file's path."""
    _check_name(profile.name)
    data = _read_all()
    fields = {k: v for k, v in asdict(profile).items() if k != "name" and v is not None}
    data["profiles"][profile.name] = fields
    if key is not None:
        _write_private(_key_file(profile.name), key + "\n")
    _write_private(_profiles_file(), json.dumps(data, indent=2, sort_keys=True) + "\n")
    return _key_file(profile.name)


def delete_profile(name: str) -> bool:
    """Forget a profile and remove its key file; False when there was nothing to forget."""
    data = _read_all()
    existed = data["profiles"].pop(_check_name(name), None) is not None
    key = _key_file(name)
    if key.exists():
        key.unlink()
        existed = True
    if existed:
        _write_private(_profiles_file(), json.dumps(data, indent=2, sort_keys=True) + "\n")
    return existed
