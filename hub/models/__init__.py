"""Every ORM model, imported here so Alembic and the app see the whole schema at once."""

from hub.models.api_key import ApiKey
from hub.models.approval import Approval
from hub.models.audit_chain_head import AuditChainHead
from hub.models.audit_event import AuditEvent
from hub.models.base import Base
from hub.models.catalog import Catalog
from hub.models.console_session import ConsoleSession
from hub.models.credential import Credential
from hub.models.decision_outcome import DecisionOutcome
from hub.models.deployment import Deployment, DeploymentEntry
from hub.models.drift import CatalogDrift, ServerProbe
from hub.models.grant import Grant
from hub.models.mcp_origin_era import McpOriginEra
from hub.models.oauth_authorization import OAuthAuthorization
from hub.models.oauth_client import OAuthClient
from hub.models.principal import Principal
from hub.models.secret_check import SecretCheck
from hub.models.server import Server
from hub.models.tenant import Tenant
from hub.models.worker_job import WorkerJob

__all__ = [
    "ApiKey",
    "Approval",
    "AuditChainHead",
    "AuditEvent",
    "Base",
    "Catalog",
    "CatalogDrift",
    "ConsoleSession",
    "Credential",
    "DecisionOutcome",
    "Deployment",
    "DeploymentEntry",
    "Grant",
    "McpOriginEra",
    "OAuthAuthorization",
    "OAuthClient",
    "Principal",
    "SecretCheck",
    "Server",
    "ServerProbe",
    "Tenant",
    "WorkerJob",
]
