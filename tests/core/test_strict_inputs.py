"""Request bodies take the types their schema declares, not what lax coercion makes of others: a
time is ISO 8601 text (never a number, which pydantic reads as seconds or milliseconds since
1970), an integer is a JSON integer (not ``true``, ``"1"`` or ``1.0``)."""

from __future__ import annotations

import httpx2
import pytest
from pydantic import TypeAdapter, ValidationError

from hub.core.db import Database
from hub.core.schemas import UtcDatetime
from tests.support.factories import make_principal, make_tenant

_TIME = TypeAdapter(UtcDatetime | None)


@pytest.mark.parametrize(
    "value", [1893456000, 99999999999, 1.5e9, True, "1893456000", " 1893456000.5 ", "1e9"]
)
def test_a_number_is_not_a_time(value: object) -> None:
    with pytest.raises(ValidationError, match="ISO 8601"):
        _TIME.validate_python(value)


@pytest.mark.parametrize("value", ["2030-01-01T00:00:00Z", "2030-01-01T01:00:00+01:00", None])
def test_iso_text_is_a_time(value: str | None) -> None:
    read = _TIME.validate_python(value)
    assert (read is None) == (value is None)
    if read is not None:
        assert read.isoformat() == "2030-01-01T00:00:00+00:00"


@pytest.mark.parametrize("expires_at", [1893456000, 99999999999, "1893456000"])
async def test_a_key_expiry_given_as_a_number_is_400(
    client: httpx2.AsyncClient, database: Database, expires_at: object
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    url = f"/tenants/{tenant.id}/principals/{admin.principal_id}/keys"
    refused = await client.post(url, json={"expires_at": expires_at}, headers=admin.headers)
    assert refused.status_code == 400, refused.text
    assert "ISO 8601" in refused.json()["error"]["details"][0]["msg"]
    made = await client.post(
        url, json={"expires_at": "2030-01-01T00:00:00Z"}, headers=admin.headers
    )
    assert made.status_code == 201, made.text
    assert made.json()["data"]["expires_at"].startswith("2030-01-01T00:00:00")


@pytest.mark.parametrize("version", [True, "2", 2.0])
async def test_a_credential_version_is_an_integer(
    client: httpx2.AsyncClient, database: Database, version: object
) -> None:
    tenant = await make_tenant(database)
    admin = await make_principal(database, tenant.id)
    url = f"/tenants/{tenant.id}/credentials"
    made = await client.post(
        url,
        json={"name": "s", "type": "secret", "secret": "0123456789abcdef"},
        headers=admin.headers,
    )
    assert made.status_code == 201, made.text
    item = f"{url}/{made.json()['data']['id']}"
    body = {"secret": "fedcba9876543210", "version": version}
    refused = await client.patch(item, json=body, headers=admin.headers)
    assert refused.status_code == 400, refused.text
