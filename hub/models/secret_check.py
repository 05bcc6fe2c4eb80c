"""secret_checks: what the hub's secrets looked like to the database that holds their work.

One row per key id of the keyring (``key:<kid>``: an AES-GCM tag of nothing under that key) and
one for the API-key pepper (``pepper``: an HMAC of a fixed string under it). Neither value reveals
its secret; both tell whether the secrets a replica was started with are the ones this database's
sealed values and key hashes were made with, which ``/readyz`` checks (stop 53). Not a tenant's:
the keyring and the pepper are the platform's.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from hub.core.clock import now
from hub.core.dbtypes import UTCDateTime
from hub.models.base import Base


class SecretCheck(Base):
    __tablename__ = "secret_checks"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary(), nullable=False)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=now)
