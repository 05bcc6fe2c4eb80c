"""A database that is away is a 503 whatever the driver calls it (DESIGN §13, §11 scale-out).

asyncpg reports a connection the server closed mid-statement, and a server still starting up, as
a bare ``DBAPIError`` (not an ``OperationalError``); ``tests/scaleout`` restarts a real server
under load, these check the classification itself.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError

from hub.core.handlers import _server_unavailable


class _DriverError(Exception):
    def __init__(self, sqlstate: str | None) -> None:
        super().__init__("driver error")
        self.sqlstate = sqlstate


def _error(sqlstate: str | None, *, invalidated: bool = False) -> DBAPIError:
    return DBAPIError("SELECT 1", None, _DriverError(sqlstate), connection_invalidated=invalidated)


def test_a_server_that_is_away_is_unavailable() -> None:
    for state in ("08006", "57P01", "57P02", "57P03", "53300"):
        assert _server_unavailable(_error(state)), state
    assert _server_unavailable(_error(None, invalidated=True))


def test_other_database_errors_are_not_hidden_as_unavailable() -> None:
    for state in (None, "42501", "22P02", "42P01"):
        assert not _server_unavailable(_error(state)), state
