"""What one hub replica holds: its :class:`~hub.core.components.Components`, built once per app.

Nothing here does I/O; the database engine is made in the app's lifespan and the fetcher's pool
opens connections lazily. Domains read their part through a typed dependency
(``Depends(component(X))``); the grant engine reaches the route dependencies of :mod:`hub.authz`
as a :class:`~hub.authz.decider.RouteDecider`, because :mod:`hub.grants` sits above them.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from hub import __version__
from hub.approvals.erasure import register_erasure
from hub.approvals.gauge import pending_reader
from hub.approvals.service import ApprovalContext
from hub.audit.failures import audit_failed_request
from hub.audit.writer import AuditWriter
from hub.auth.caller import TenantAccess
from hub.auth.key_format import PepperProof
from hub.authz.decider import Effect, RouteDecider
from hub.core.components import Components
from hub.core.crypto import Keyring
from hub.core.handlers import FailureHooks
from hub.core.jobs import JobRegistry
from hub.core.metrics import Metrics
from hub.core.scraped import ScrapedState
from hub.core.settings import ConfigError, Settings
from hub.core.workers import Workers
from hub.credentials.readiness import keyring_covers_rows
from hub.credentials.rotation import backlog_reader
from hub.credentials.service import CredentialContext
from hub.deployments.bundle_cache import BundleCache
from hub.drift import DriftWatch
from hub.drift.gauge import drifted_reader
from hub.drift.worker import register_drift
from hub.egress import EgressConfig, Fetcher
from hub.gateway.adapters.bundle import bundle_decisions
from hub.gateway.adapters.effective import effective_check
from hub.gateway.adapters.unreported import register_unreported
from hub.gateway.adapters.view import ViewLoader
from hub.gateway.engine.engine import Gateway, GatewayOptions
from hub.grants import service as grants_service
from hub.grants.cache import PolicyCache
from hub.health.secret_checks import secrets_match
from hub.health.service import Readiness
from hub.mcp import McpClient, SessionKeeper
from hub.oauth.expiry import register_expiry
from hub.oauth.rotation import keyring_covers_oauth_rows
from hub.oauth.service import OAuthConfig, OAuthContext, TokenRefresher, register_refresh
from hub.ratelimit import RateLimitConfigError, RateLimiter, parse_policies
from hub.upstream import UpstreamContext

__all__ = ["CLIENT_INFO", "build_components", "egress_config", "rate_limiter", "register_jobs"]

CLIENT_INFO = {"name": "mcp-hub", "version": __version__}


def egress_config(settings: Settings) -> EgressConfig:
    try:
        return EgressConfig.from_settings(settings)
    except ValueError as exc:
        raise ConfigError(f"invalid egress configuration: {exc}") from None


def rate_limiter(settings: Settings, metrics: Metrics) -> RateLimiter:
    """The replica's limiter; a malformed ``HUB_RATE_LIMITS`` stops the hub here."""
    try:
        policies = parse_policies(settings.rate_limits)
    except RateLimitConfigError as exc:
        raise ConfigError(str(exc)) from None
    return RateLimiter(policies, settings.rate_limit_storage_url.get_secret_value(), metrics)


def register_jobs(
    jobs: JobRegistry,
    refresher: TokenRefresher,
    watch: DriftWatch,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """Every background job kind of the hub, registered with one call each
    (``jobs.register(kind, handler, …)``; see :mod:`hub.core.jobs`)."""
    register_refresh(jobs, refresher)
    register_expiry(jobs)
    register_drift(jobs, watch)
    register_erasure(jobs, settings.approval_arguments_keep_s)
    register_unreported(jobs, metrics)


def scraped_state(keyring: Keyring, metrics: Metrics) -> ScrapedState:
    """The gauges ``/metrics`` reads from the database (:mod:`hub.core.scraped`)."""
    state = ScrapedState()
    state.add("the key-rotation backlog", backlog_reader(keyring, metrics))
    state.add("the approvals pending", pending_reader(metrics))
    state.add("the drifted tools", drifted_reader(metrics))
    return state


def _route_decider(cache: PolicyCache) -> RouteDecider:
    async def decide(
        session: AsyncSession, access: TenantAccess, resource: str, action: str
    ) -> Effect:
        decision = await grants_service.decide(session, cache, access, resource, action)
        return decision.effect

    return RouteDecider(decide)


def build_components(settings: Settings, fetcher: Fetcher | None = None) -> Components:
    """Everything a replica needs; a malformed keyring or egress setting stops the hub here."""
    keyring = Keyring.from_settings(settings)
    egress = egress_config(settings)
    fetcher = fetcher or Fetcher(egress)
    pepper = settings.api_key_pepper.get_secret_value().encode() if settings.api_key_pepper else b""
    metrics = Metrics()
    pepper_proof = PepperProof()
    cache = PolicyCache()
    views = ViewLoader(settings.gateway_cache_bytes, on_miss=metrics.count_gateway_cache())
    idle_s = settings.upstream_session_idle_s
    counted = metrics.count_upstream_sessions() if idle_s > 0 else None
    keeper = SessionKeeper(idle_s=idle_s, on_change=counted) if idle_s > 0 else None
    client = McpClient(fetcher, client_info=CLIENT_INFO, keeper=keeper)
    oauth = OAuthConfig.from_settings(settings)
    refresher = TokenRefresher(fetcher, keyring, oauth)  # the upstream's TokenKeeper
    upstream = UpstreamContext(
        client=client,
        keyring=keyring,
        egress=egress,
        deadline_s=settings.discovery_timeout_s,
        metrics=metrics,
        call_deadline_s=settings.tool_call_timeout_s,
        tokens=refresher,
    )
    limiter = rate_limiter(settings, metrics)
    watch = DriftWatch(upstream, metrics, settings.drift_interval_s, limiter)
    jobs = JobRegistry()
    register_jobs(jobs, refresher, watch, settings, metrics)
    return Components(
        [
            settings,
            keyring,
            pepper_proof,
            egress,
            fetcher,
            metrics,
            scraped_state(keyring, metrics),
            cache,
            _route_decider(cache),
            limiter,
            CredentialContext(keyring, egress, pepper),
            upstream,
            watch,
            OAuthContext(oauth, fetcher, keyring, egress, client, refresher),
            Readiness(
                (
                    keyring_covers_rows(keyring),
                    keyring_covers_oauth_rows(keyring),
                    secrets_match(keyring, pepper, pepper_proof),
                )
            ),
            FailureHooks((audit_failed_request,)),
            AuditWriter(metrics.audit_lost),
            ApprovalContext(
                keyring=keyring,
                ttl_s=settings.approval_ttl_s,
                use_s=settings.approval_use_s,
                wait_s=settings.approval_wait_s,
                max_pending=settings.max_pending_approvals,
            ),
            Gateway(
                GatewayOptions(
                    max_result_bytes=settings.max_tool_result_bytes,
                    drift_policy=settings.drift_policy,
                )
            ),
            views,
            effective_check(views, settings.drift_policy),
            bundle_decisions(views, cache, settings.drift_policy),
            BundleCache(),
            jobs,
            Workers(
                jobs,
                metrics,
                poll_s=settings.worker_poll_s,
                concurrency=settings.worker_concurrency,
            ),
        ]
    )
