"""The closed vocabulary of audit actions: every action the hub records, and nothing else.

An audit row's ``action`` is one of :class:`Action` — never free text — so a SIEM rule or an
``?action=`` filter can rely on the spelling, and a typo fails type checking (and
:func:`hub.audit.service.record` refuses anything else at run time). The failure audit records a
refused or failed request under its route's name, so every authenticated route's name is an action
too (``tests/audit/test_actions.py`` walks the app's routes and every ``record*`` call in the code).

Add an action here when code starts recording it; names are ``<noun>.<verb>``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = ["Action", "Outcome", "action_of_route"]

#: how an audited act ended; ``pending`` is an ``ask`` call waiting for its approval;
#: ``unreported`` a direct-mode call the hub allowed whose sidecar never reported its outcome
#: before the decision expired (it may have run: :mod:`hub.gateway.adapters.unreported`)
Outcome = Literal["success", "denied", "failed", "pending", "unreported"]


class Action(StrEnum):
    """Every action an audit row may carry."""

    # platform: tenants, the platform admin and its keys
    TENANT_CREATE = "tenant.create"
    TENANT_LIST = "tenant.list"
    TENANT_GET = "tenant.get"
    TENANT_UPDATE = "tenant.update"
    TENANT_DISABLE = "tenant.disable"
    PLATFORM_ADMIN_BOOTSTRAP = "platform_admin.bootstrap"
    PLATFORM_KEY_CREATE = "platform_key.create"
    PLATFORM_KEY_LIST = "platform_key.list"
    PLATFORM_KEY_REVOKE = "platform_key.revoke"
    PLATFORM_KEY_ROLL = "platform_key.roll"
    WHOAMI = "whoami"
    # principals and their keys
    PRINCIPAL_CREATE = "principal.create"
    PRINCIPAL_LIST = "principal.list"
    PRINCIPAL_GET = "principal.get"
    PRINCIPAL_UPDATE = "principal.update"
    PRINCIPAL_DELETE = "principal.delete"
    API_KEY_CREATE = "api_key.create"
    API_KEY_LIST = "api_key.list"
    API_KEY_REVOKE = "api_key.revoke"
    API_KEY_ROLL = "api_key.roll"
    # grants
    GRANT_CREATE = "grant.create"
    GRANT_LIST = "grant.list"
    GRANT_DELETE = "grant.delete"
    GRANT_CHECK = "grant.check"
    # credentials
    CREDENTIAL_CREATE = "credential.create"
    CREDENTIAL_LIST = "credential.list"
    CREDENTIAL_GET = "credential.get"
    CREDENTIAL_UPDATE = "credential.update"
    CREDENTIAL_DELETE = "credential.delete"
    CREDENTIAL_LEASE = "credential.lease"
    CREDENTIAL_CHALLENGE = "credential.challenge"
    CREDENTIAL_REFRESH = "credential.refresh"
    CREDENTIAL_INSUFFICIENT_SCOPE = "credential.insufficient_scope"
    # OAuth to upstream servers
    OAUTH_AUTHORIZE = "oauth.authorize"
    OAUTH_AUTHORIZATION_GET = "oauth_authorization.get"
    OAUTH_CALLBACK = "oauth.callback"
    OAUTH_CLIENT_METADATA = "oauth.client_metadata"
    # discovery, servers, catalogs
    MCP_DISCOVER = "mcp.discover"
    SERVER_CREATE = "server.create"
    SERVER_LIST = "server.list"
    SERVER_GET = "server.get"
    SERVER_UPDATE = "server.update"
    SERVER_DELETE = "server.delete"
    CATALOG_CREATE = "catalog.create"
    CATALOG_LIST = "catalog.list"
    CATALOG_GET = "catalog.get"
    CATALOG_DIFF = "catalog.diff"
    CATALOG_LATEST = "catalog.latest"
    CATALOG_DRIFT = "catalog.drift"
    # deployments and the data plane
    DEPLOYMENT_CREATE = "deployment.create"
    DEPLOYMENT_LIST = "deployment.list"
    DEPLOYMENT_GET = "deployment.get"
    DEPLOYMENT_UPDATE = "deployment.update"
    DEPLOYMENT_DELETE = "deployment.delete"
    DEPLOYMENT_BUNDLE = "deployment.bundle"
    DEPLOYMENT_DRIFT = "deployment.drift"
    DEPLOYMENT_DECIDE = "deployment.decide"
    DEPLOYMENT_DECISION_OUTCOME = "deployment.decision_outcome"
    DEPLOYMENT_DECISION_RELIST = "deployment.decision_relist"
    TOOL_CALL = "tool.call"
    GATEWAY_MCP = "gateway.mcp"
    GATEWAY_MCP_STREAM = "gateway.mcp_stream"
    APPROVAL_LIST = "approval.list"
    APPROVAL_GET = "approval.get"
    APPROVAL_DECIDE = "approval.decide"
    APPROVAL_ARGUMENTS_ERASE = "approval.arguments_erase"
    # the console (DESIGN §14): signing in and out
    CONSOLE_SIGN_IN = "console_session.create"
    CONSOLE_SIGN_OUT = "console_session.delete"
    # the audit trail itself (reading it is audited only when refused)
    AUDIT_LIST = "audit.list"
    AUDIT_VERIFY = "audit.verify"
    AUDIT_EXPORT = "audit.export"
    PLATFORM_AUDIT_LIST = "platform_audit.list"
    PLATFORM_AUDIT_VERIFY = "platform_audit.verify"
    PLATFORM_AUDIT_EXPORT = "platform_audit.export"
    # a request whose route has no name (unmatched); never expected, kept so it is still recorded
    REQUEST = "request"


_BY_VALUE = {action.value: action for action in Action}


def action_of_route(name: str | None) -> Action:
    """The action a refused or failed request is recorded under: its route's name."""
    return _BY_VALUE.get(name or "", Action.REQUEST)
