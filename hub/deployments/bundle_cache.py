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

Per process, least recently used first out: ``entries`` bundles, each body kept only up to
``body_limit`` bytes (a larger one keeps its ETag, which is all a ``304`` needs, and is built again
for a ``200``).
"""

from __future__ import annotations

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


class BundleCache:
    """One per replica: rendered bundles by :func:`bundle_key`."""

    def __init__(self, entries: int = 256, body_limit: int = 128 * 1024) -> None:
        self._kept: OrderedDict[Hashable, KeptBundle] = OrderedDict()
        self._entries = entries
        self._body_limit = body_limit

    def get(self, key: Hashable) -> KeptBundle | None:
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
        return kept

    def put(self, key: Hashable, body: bytes, etag: str) -> None:
        self._kept[key] = KeptBundle(etag, body if len(body) <= self._body_limit else None)
        self._kept.move_to_end(key)
        while len(self._kept) > self._entries:
            self._kept.popitem(last=False)
