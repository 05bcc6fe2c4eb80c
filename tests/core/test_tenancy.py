"""TenantId can only be minted where the rules allow, and never constructed."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from hub.core.tenancy import TenantId, scoped, system_scope
from hub.models import Grant

HUB = Path(__file__).resolve().parents[2] / "hub"

# The only places allowed to mint: authentication, the platform admin's path resolution, and
# explicit system scopes (each listed; a new one must be added here on purpose, in review).
ALLOWED_MINTS = {
    "hub/core/tenancy.py",  # the definition and system_scope
    "hub/auth/service.py",  # authentication: the caller's own tenant
    "hub/authz/deps.py",  # the platform admin's path resolution
}
ALLOWED_SYSTEM_SCOPES = {
    "hub/core/tenancy.py",
    "hub/tenants/service.py",  # the platform admin acting on the tenant it manages
    "hub/oauth/callback.py",  # no key: the state is the capability, and its row names the tenant
    "hub/oauth/worker.py",  # the refresher ahead of expiry acts for each claimed row's own tenant
    "hub/drift/worker.py",  # the drift watch probes each referenced server for its own tenant
    "hub/cli/audit.py",  # ``hub audit verify``: an operator checking every tenant's chain
    # row-level security: a worker job acting for its own row's tenant, and a pass over every
    # tenant (key rotation, readiness, the refresher), one scope after the other
    "hub/core/rls.py",
    "hub/core/tenant_passes.py",
}


def _callers(pattern: str) -> set[str]:
    found = set()
    for path in HUB.rglob("*.py"):
        if re.search(pattern, path.read_text()):
            found.add(str(path.relative_to(HUB.parent)))
    return found


def test_tenant_id_cannot_be_constructed() -> None:
    with pytest.raises(TypeError):
        TenantId(uuid.uuid4())


def test_tenant_id_is_minted_only_in_allowed_places() -> None:
    assert _callers(r"TenantId\._mint\(") <= ALLOWED_MINTS
    assert _callers(r"\bsystem_scope\(") <= ALLOWED_SYSTEM_SCOPES


def test_scoped_refuses_a_bare_uuid() -> None:
    with pytest.raises(TypeError):
        scoped(Grant, uuid.uuid4())  # type: ignore[arg-type]
    query = scoped(Grant, system_scope(uuid.uuid4(), reason="test"))
    assert "grants.tenant_id" in str(query)


def test_tenant_id_is_immutable_and_compares_by_value() -> None:
    value = uuid.uuid4()
    a, b = system_scope(value, reason="test"), system_scope(value, reason="test")
    assert a == b
    assert hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a._value = uuid.uuid4()
