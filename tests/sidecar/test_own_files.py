"""The sidecar's own files (the cached bundle, the remembered deployment names) read as absent
when they are not what it wrote, whatever they hold: a file edited or corrupted into deep
nesting made ``json.loads`` raise ``RecursionError``, which none of the readers caught (stop 42).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.sidecar.cache import BundleCache, CachedBundle
from hub.sidecar.config import SidecarConfig
from hub.sidecar.names import _remembered, _remembered_path

UNREADABLE = [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"body": "{}", "etag": null, "confirmed_at": NaN}',
    b'{"body": "\\ud800", "etag": null, "confirmed_at": 1}',
    b"\xff\xfe",
    b"",
]


@pytest.mark.parametrize("content", UNREADABLE)
def test_an_unreadable_cached_bundle_is_no_cached_bundle(tmp_path: Path, content: bytes) -> None:
    cache = BundleCache(tmp_path, "https://hub.example", "t", "d")
    cache.store(CachedBundle(b"{}", '"e1"', 1.0))
    assert cache.load() == CachedBundle(b"{}", '"e1"', 1.0)
    cache.path.write_bytes(content)
    assert cache.load() is None


@pytest.mark.parametrize("content", UNREADABLE)
def test_unreadable_remembered_names_are_none(tmp_path: Path, content: bytes) -> None:
    config = SidecarConfig("https://hub.example", "t", "docs", "hub_x", cache_dir=tmp_path)
    _remembered_path(config).write_bytes(content)
    assert _remembered(config) == {}
