"""Readiness: the keyring and the pepper are the ones this database's values were made with.

A key id missing from the keyring is caught by the credentials' own check; a key with a known id
and other bytes, or another pepper, was not: after a restore with the wrong secrets, ``/readyz``
said 200 while every call failed ``credential_unavailable`` or every key was 401 (an upgrade and
backup walk, stop 52). ``secret_checks`` keeps a check value per key id and one for the pepper
(:mod:`hub.models.secret_check`), and a replica whose secrets disagree with a recorded one is not
ready.

What is recorded must be the database's secrets, never a wrong replica's: the first replica
asked used to record its own, so after an upgrade a replica with a wrong key, asked first, set
the reference and locked every right one out (a review, stop 53). A replica now records only
what it has seen work: a key id once it opened a stored value under it and no value failed
(:meth:`~hub.core.crypto.Keyring.proven`), the pepper once an API key authenticated on it
(:class:`~hub.auth.key_format.PepperProof`). ``hub bootstrap`` records them too, on the new
database it makes the first platform admin of (nothing sealed yet: its keyring is the
database's from then on); ``hub bootstrap --force`` records the pepper it makes the new
platform admin's key with, which is how a deliberate change of pepper is accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from hub.auth.key_format import PepperProof, pepper_check
from hub.core import clock
from hub.core.crypto import Keyring
from hub.core.db import Database
from hub.health.service import ReadinessCheck
from hub.models.secret_check import SecretCheck

__all__ = ["PEPPER_MISMATCH", "key_mismatch", "record_secret_checks", "secrets_match"]

log = logging.getLogger("hub.health")

PEPPER = "pepper"
PEPPER_MISMATCH = (
    "HUB_API_KEY_PEPPER is not the pepper this database's API keys were made with (restore "
    "the one that goes with this database; to change the pepper on purpose, `hub bootstrap "
    "--force` records the new one)"
)


def key_mismatch(key_ids: Iterable[str]) -> str:
    return (
        "HUB_ENCRYPTION_KEYS holds another key than the one this database's values were sealed "
        f"with under key id {', '.join(key_ids)} (restore the keyring that goes with this "
        "database; a new key takes a new key id)"
    )


def _key_name(key_id: str) -> str:
    return f"key:{key_id}"


def secrets_match(keyring: Keyring, pepper: bytes, proof: PepperProof) -> ReadinessCheck:
    """The readiness check; one read, and one write when a secret seen working is not
    recorded yet."""

    async def check(db: Database) -> str | None:
        async with db.session(write=False) as session:
            found = await session.execute(sa.select(SecretCheck.name, SecretCheck.value))
            stored = {name: bytes(value) for name, value in found.all()}
        wrong = [
            key_id
            for key_id in keyring.key_ids
            if _key_name(key_id) in stored
            and not keyring.matches(key_id, stored[_key_name(key_id)])
        ]
        pepper_wrong = PEPPER in stored and stored[PEPPER] != pepper_check(pepper)
        keys = [k for k in keyring.key_ids if _key_name(k) not in stored and keyring.proven(k)]
        with_pepper = PEPPER not in stored and proof.proven
        if keys or with_pepper:
            await record_secret_checks(db, keyring, pepper, keys=keys, with_pepper=with_pepper)
        if wrong:
            log.warning("readiness: the keyring's key under id %s is not this database's", wrong)
            return key_mismatch(wrong)
        if pepper_wrong:
            log.warning("readiness: the API-key pepper is not this database's")
            return PEPPER_MISMATCH
        return None

    return check


async def record_secret_checks(
    db: Database,
    keyring: Keyring,
    pepper: bytes,
    *,
    keys: Iterable[str] | None = None,
    with_pepper: bool = True,
    replace_pepper: bool = False,
) -> None:
    """Record the check value of the key ids ``keys`` (None: every one of the ring) and, with
    ``with_pepper``, of the pepper, those not recorded yet (the first record stands: two
    replicas racing keep one, and the other is then not ready); with ``replace_pepper``, the
    pepper's even when one is recorded."""
    chosen = keyring.key_ids if keys is None else tuple(keys)
    rows = [{"name": _key_name(k), "value": keyring.check_value(k)} for k in chosen]
    if with_pepper:
        rows.append({"name": PEPPER, "value": pepper_check(pepper)})
    if not rows:
        return
    now = clock.now()
    async with db.session(write=True) as session:
        insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
        for row in rows:
            statement = insert(SecretCheck).values(**row, recorded_at=now)
            if replace_pepper and row["name"] == PEPPER:
                excluded = statement.excluded
                statement = statement.on_conflict_do_update(
                    index_elements=[SecretCheck.name],
                    set_={"value": excluded.value, "recorded_at": excluded.recorded_at},
                )
            else:
                statement = statement.on_conflict_do_nothing(index_elements=[SecretCheck.name])
            await session.execute(statement)
