"""The audit hash chain (DESIGN §11): what a row's hash covers, and how a chain is checked.

``hash = sha256(prev_hash ‖ canonical JSON of the row)`` where ``prev_hash`` is the previous row's
hash as 64 lower-case hex characters (:data:`GENESIS`, 64 zeros, for a chain's first row) and the
row is the object of :func:`payload`: ``id``, ``tenant_id``, ``seq``, ``at`` (RFC 3339 UTC with
microseconds), ``actor_id``, ``action``, ``resource``, ``outcome``, ``request_id`` and ``details``,
serialised by :func:`hub.core.canonical.canonical_json` (sorted keys, no whitespace, UTF-8).
Anyone holding an export can recompute it.

``details`` are normalised before they are stored (:func:`normalise_details`) so the value read
back from either database is the value that was hashed: plain JSON types, and integral floats
as integers (PostgreSQL's ``jsonb`` prints ``1e16`` as ``10000000000000000``, which reads back as
an int).

:class:`ChainCheck` walks one chain in ``seq`` order and stops at the first row that is not what
the chain says: a changed row (its hash no longer matches), a deleted one (the next row's
``prev_hash`` or ``seq`` does not follow), rows cut from the end (the head names a later row) or
rows added beyond the head. It starts at the chain's beginning, or at an :class:`Anchor`: a place
in the chain (a ``seq`` and the hash of that row) that an earlier check reported and the caller
kept elsewhere, so a chain of millions of rows is checked again from where it was last known good.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from hub.core.canonical import canonical_json

__all__ = [
    "GENESIS",
    "Anchor",
    "ChainCheck",
    "ChainRow",
    "NewEvent",
    "Verification",
    "link_hash",
    "normalise_details",
    "payload",
]

GENESIS = "0" * 64


@dataclass(slots=True)
class NewEvent:
    """A row about to be appended, as plain values: the appends insert it with Core statements,
    so it needs none of an ``AuditEvent``'s ORM instrumentation (which cost a tool call's row
    more than its hashing). Its fields are the table's columns (``tests/audit/test_writer.py``
    holds them to it)."""

    id: uuid.UUID
    tenant_id: uuid.UUID | None
    seq: int
    at: datetime
    actor_id: uuid.UUID | None
    action: str
    resource: str
    outcome: str
    request_id: str | None
    details: dict[str, Any]
    prev_hash: str
    hash: str = ""


class ChainRow(Protocol):
    """What a hash is computed over: a stored row (an ``AuditEvent``, or its columns as a walk
    reads them), or a :class:`NewEvent` about to be appended."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def tenant_id(self) -> uuid.UUID | None: ...
    @property
    def seq(self) -> int: ...
    @property
    def at(self) -> datetime: ...
    @property
    def actor_id(self) -> uuid.UUID | None: ...
    @property
    def action(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def request_id(self) -> str | None: ...
    @property
    def details(self) -> dict[str, Any]: ...
    @property
    def prev_hash(self) -> str: ...
    @property
    def hash(self) -> str: ...


@dataclass(frozen=True)
class Anchor:
    """A place in a chain known good: row ``seq`` had hash ``hash`` (``0`` and :data:`GENESIS`:
    before the first row)."""

    seq: int
    hash: str


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def normalise_details(details: dict[str, Any] | None) -> dict[str, Any]:
    """``details`` as both databases will hand them back: plain JSON, integral floats as ints."""
    plain: dict[str, Any] = _plain(json.loads(json.dumps(details or {}, allow_nan=False)))
    return plain


def _uuid(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def payload(row: ChainRow) -> dict[str, Any]:
    """The object a row's hash covers (everything but ``prev_hash`` and ``hash`` themselves)."""
    return {
        "id": str(row.id),
        "tenant_id": _uuid(row.tenant_id),
        "seq": row.seq,
        "at": row.at.astimezone(UTC).isoformat(timespec="microseconds"),
        "actor_id": _uuid(row.actor_id),
        "action": str(row.action),
        "resource": row.resource,
        "outcome": row.outcome,
        "request_id": row.request_id,
        "details": row.details,
    }


def link_hash(prev_hash: str, row: ChainRow) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_json(payload(row))).hexdigest()


@dataclass(frozen=True)
class Verification:
    """The answer of ``…/audit/verify``: ``checked`` rows were examined; ``first_bad_id`` is the
    first row that breaks the chain (for rows cut from its end: the id the head names)."""

    ok: bool
    checked: int
    first_bad_id: uuid.UUID | None = None
    reason: str | None = None
    head_hash: str | None = None
    head_seq: int | None = None


class ChainCheck:
    """Feed a chain's rows in ``seq`` order; the first row that breaks it is remembered."""

    def __init__(self, start: Anchor | None = None) -> None:
        self.checked = 0
        self.last_seq = 0 if start is None else start.seq
        self.last_hash = GENESIS if start is None else start.hash
        self.last_id: uuid.UUID | None = None
        self.bad_id: uuid.UUID | None = None
        self.reason: str | None = None

    @property
    def broken(self) -> bool:
        return self.bad_id is not None

    def _fail(self, row_id: uuid.UUID | None, reason: str) -> bool:
        self.bad_id, self.reason = row_id, reason
        return False

    def feed(self, row: ChainRow) -> bool:
        """Check the next row; False (and no further rows needed) once the chain is broken."""
        if self.broken:
            return False
        self.checked += 1
        if row.seq != self.last_seq + 1:
            return self._fail(row.id, "sequence_gap")
        if row.prev_hash != self.last_hash:
            return self._fail(row.id, "broken_link")
        if link_hash(row.prev_hash, row) != row.hash:
            return self._fail(row.id, "hash_mismatch")
        self.last_seq, self.last_hash, self.last_id = row.seq, row.hash, row.id
        return True

    def finish(self, head_seq: int, head_hash: str, head_id: uuid.UUID | None) -> Verification:
        """Compare the last good row with the chain's head, and answer."""
        if not self.broken and (self.last_seq, self.last_hash) != (head_seq, head_hash):
            # the head names rows that were not found, or (from an anchor) the head is behind
            # a row the anchor saw: rows were cut from the end of the chain
            same = self.last_seq == head_seq
            self._fail(head_id, "head_mismatch" if same else "missing_rows")
        if self.broken:
            return Verification(False, self.checked, self.bad_id, self.reason, head_hash, head_seq)
        return Verification(True, self.checked, None, None, head_hash, head_seq)
