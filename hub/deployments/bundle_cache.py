"""Rendered sidecar bundles kept in memory, by everything they are built from (issue 13).

A sidecar reads its bundle on every sync, and almost always gets ``304``: but the ETag is the
hash of the bundle's canonical JSON, so answering even a ``304`` meant reading every pinned
catalog's tools, building and serialising the whole bundle and hashing it. Measured under
callgrind (``GET …/bundle`` with a current ``If-None-Match``, the agent itself, PostgreSQL):
11.5 M instructions for 20 tools, 54.8 M for 300.

A bundle is a function of the deployment's view rows (:func:`~hub.deployments.service.
view_rows`: its agent, entries and servers, in order; catalogs are immutable, so their ids stand
for them), the agent's ``grants_version`` and its decisions on each tool. The endpoint reads the
rows, computes the decisions from those same rows, and looks the bundle up by
:func:`bundle_key` of the three; on a miss it builds the bundle from exactly those rows and
keeps it. So a kept bundle is always the one those inputs build (no read between the key and
the body), every replica computes the same ETag, and any change to an input is a new key.

The decisions are left out of the key, and not computed for a kept bundle, when the agent's
grants ignore the clock (none expires or has a time window: :attr:`~hub.deployments.bundle.
Deciding.timeless`): then the grants at that ``grants_version`` and the rows decide every tool
the same way at every moment, and the version and the rows are already in the key. A grant that
expires, or has a window, is a new version, whose key holds the decisions again.

Per process, least recently used first out, in two tiers: the ETags of ``etags`` bundles (all a
``304`` needs, a few hundred bytes each), and the bodies of the most recent ``entries`` of them,
each only up to ``body_limit`` bytes (any other is built again for a ``200``). With one tier of
256, a replica serving more deployments than that, each sidecar syncing in turn, found none kept:
least-recently-used keeps nothing of a cycle longer than itself. Keys are kept as a SHA-256 of
their ``repr`` (a key holds every row's columns, and the decision on every tool when a grant
is bounded in time: tens of kilobytes), so 16,384 ETags take a few megabytes.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from hub.core.tenancy import TenantId
from hub.deployments.bundle import ToolDecisions
from hub.deployments.repository import ViewRow
from hub.deployments.service import view_signature

__all__ = ["BundleCache", "KeptBundle", "bundle_key"]


@dataclass(frozen=True)
class KeptBundle:
    etag: str
    body: bytes | None  # None: over the body limit, built again when a 200 needs it


def bundle_key(
    tenant_id: TenantId,
    deployment_id: uuid.UUID,
    rows: Sequence[ViewRow],
    grants_version: int,
    decisions: ToolDecisions | None,
) -> Hashable:
    """Everything the deployment's bundle is built from, as one hashable value (``decisions``
    None: the agent's grants at ``grants_version`` ignore the clock, see the module's text)."""
    return (
        tenant_id.value,
        view_signature(deployment_id, rows),
        grants_version,
        None if decisions is None else tuple(decisions.tools.items()),
    )


def _digest(key: Hashable) -> bytes:
    """A key as kept: equal keys built the same way have the same ``repr`` (tuples of strings,
    numbers, UUIDs, datetimes and JSON values in their stored order); two that differ only in a
    dict's order are two entries, never one."""
    return hashlib.sha256(repr(key).encode()).digest()


class BundleCache:
    """One per replica: rendered bundles by :func:`bundle_key` (see the module's text)."""

    def __init__(
        self, entries: int = 256, body_limit: int = 128 * 1024, etags: int = 16_384
    ) -> None:
        self._etags: OrderedDict[bytes, str] = OrderedDict()
        self._bodies: OrderedDict[bytes, bytes] = OrderedDict()
        self._entries = entries
        self._body_limit = body_limit
        self._etag_entries = max(etags, entries)

    def get(self, key: Hashable) -> KeptBundle | None:
        digest = _digest(key)
        etag = self._etags.get(digest)
        if etag is None:
            return None
        self._etags.move_to_end(digest)
        body = self._bodies.get(digest)
        if body is not None:
            self._bodies.move_to_end(digest)
        return KeptBundle(etag, body)

    def put(self, key: Hashable, body: bytes, etag: str) -> None:
        digest = _digest(key)
        self._etags[digest] = etag
        self._etags.move_to_end(digest)
        while len(self._etags) > self._etag_entries:
            gone, _ = self._etags.popitem(last=False)
            self._bodies.pop(gone, None)
        if len(body) > self._body_limit:
            self._bodies.pop(digest, None)
            return
        self._bodies[digest] = body
        self._bodies.move_to_end(digest)
        while len(self._bodies) > self._entries:
            self._bodies.popitem(last=False)
