"""Canonical JSON and its sha256: the one serialisation hashes and ETags are computed over.

``json.dumps`` with sorted keys, no insignificant whitespace and UTF-8 (non-ASCII kept as is), over
the values exactly as given. Used for catalog and tool hashes, bundle ETags and argument hashes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "sha256_of"]


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()
