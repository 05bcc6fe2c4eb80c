"""The on-disk bundle cache (DESIGN §10.5): one file per hub and deployment, mode 0600.

It holds what the hub served — the bundle body, which carries no secret — with its ETag and the
wall-clock time the hub last confirmed it (a 200 or a 304), so a restart with the hub down serves
the last bundle until ``--max-stale``. The directory is made 0700; a file is written to a private
temporary name and renamed over the old one, so a reader never sees half of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from hub.core import portable_json

__all__ = ["FILE_DEPTH", "BundleCache", "CachedBundle", "write_private"]

log = logging.getLogger("hub.sidecar")
#: how deeply the sidecar's own files may nest (they nest one level; a file edited or corrupted
#: into deep nesting made ``json.loads`` raise ``RecursionError``, which no reader caught)
FILE_DEPTH = 8


@dataclass(frozen=True)
class CachedBundle:
    body: bytes
    etag: str | None
    confirmed_at: float  # unix seconds


class BundleCache:
    def __init__(self, directory: Path, hub: str, tenant: str, deployment: str) -> None:
        self.directory = directory
        name = hashlib.sha256(f"{hub}\n{tenant}\n{deployment}".encode()).hexdigest()[:32]
        self.path = directory / f"bundle-{name}.json"

    def load(self) -> CachedBundle | None:
        try:
            raw = portable_json.loads(self.path.read_bytes(), max_depth=FILE_DEPTH)
            body = str(raw["body"]).encode()
            etag = raw.get("etag")
            return CachedBundle(
                body, etag if isinstance(etag, str) else None, float(raw["confirmed_at"])
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("sidecar: the cached bundle at %s is unreadable; ignoring it", self.path)
            return None

    def store(self, cached: CachedBundle) -> None:
        payload = json.dumps(
            {
                "etag": cached.etag,
                "confirmed_at": cached.confirmed_at,
                "body": cached.body.decode(),
            }
        ).encode()
        write_private(self.path, payload)


def write_private(path: Path, payload: bytes) -> None:
    """``payload`` at ``path`` (0600, its directory made 0700), written to a private temporary
    name and renamed over the old file; a failure is a warning (a cache is an optimisation)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        log.warning("sidecar: cannot write the cache file %s: %s", path, type(exc).__name__)
