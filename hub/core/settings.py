"""The hub's one settings object.

Everything configurable comes from the environment with the ``HUB_`` prefix (DESIGN §2); nothing
else in the hub reads ``os.environ``. List-valued settings are comma-separated strings parsed here,
explicitly, rather than pydantic-settings' JSON decoding, so ``HUB_EGRESS_ALLOW_CIDRS=10.0.0.0/8,…``
works as an operator would type it.

``production`` refuses to start with generated or missing secrets or with the embedded SQLite
database; ``development`` fills in missing secrets from a generated file under the data directory
(see :mod:`hub.core.devsecrets`).
"""

from __future__ import annotations

import ipaddress
import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["ConfigError", "Settings", "get_settings", "load_settings"]

DEFAULT_SQLITE_URL = "sqlite+aiosqlite:///.hub/hub.db"


class ConfigError(Exception):
    """The configuration cannot be used; the message names what is wrong (never a secret value)."""


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


#: listen addresses that say nothing of where the hub is reached
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "", "[::]"})  # noqa: S104 - compared, not bound


class Settings(BaseSettings):
    """Settings of one hub process (DESIGN §2)."""

    model_config = SettingsConfigDict(
        env_prefix="HUB_",
        extra="ignore",
        hide_input_in_errors=True,
        frozen=True,
    )

    env: Literal["development", "production"] = "development"
    data_dir: Path = Path(".hub")
    database_url: str = DEFAULT_SQLITE_URL
    # PostgreSQL's two roles (README "Database roles"): the app connects as a non-owner role held to
    # row-level security; ``hub db upgrade`` connects as the schema's owner (this URL; unset: the
    # app's) and grants the app role (``HUB_DATABASE_APP_ROLE``) what it needs.
    database_owner_url: str | None = None
    database_app_role: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    database_pool_size: int = Field(default=10, ge=1, le=200)
    # PostgreSQL: the longest one statement of the app (hub serve, hub worker) may run, waiting on a
    # lock included, before the server cancels it (a 503); 0: no limit. Maintenance commands
    # (hub db upgrade, crypto rotate, audit verify) never have one.
    database_statement_timeout_s: float = Field(default=20.0, ge=0, le=3600)

    # Secrets: a keyring "kid:base64(32 bytes),kid2:…", the active key id, the API-key pepper.
    encryption_keys: SecretStr | None = None
    active_key_id: str | None = None
    api_key_pepper: SecretStr | None = None
    # Set by hub.core.devsecrets when the values above came from a generated development file.
    secrets_generated: bool = False

    # Egress (DESIGN §6)
    allow_loopback: bool = False
    egress_allow_cidrs: Annotated[list[str], NoDecode] = Field(default_factory=list)
    extra_origins: dict[str, list[str]] = Field(default_factory=dict)
    tls_ca_file: Path | None = None
    discovery_timeout_s: float = Field(default=30.0, gt=0, le=600)
    tool_call_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    # a handshake-era upstream's session is kept between tool calls for up to this long (0: never)
    upstream_session_idle_s: float = Field(default=60.0, ge=0, le=3600)
    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_operation_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    egress_max_per_origin: int = Field(default=8, ge=1, le=1024)
    egress_max_per_tenant_origin: int = Field(default=4, ge=1, le=1024)

    # The data plane (DESIGN §10)
    approval_wait_s: float = Field(default=20.0, ge=0, le=300)
    approval_ttl_s: float = Field(default=900.0, gt=0, le=7 * 86_400)
    approval_use_s: float = Field(default=600.0, gt=0, le=86_400)
    # how long an approval's arguments outlive its last possible use (hub.approvals.erasure)
    approval_arguments_keep_s: float = Field(default=86_400.0, ge=0, le=90 * 86_400)
    max_tool_result_bytes: int = Field(default=1024 * 1024, ge=1024)
    # the JSON bytes of tool definitions a replica keeps for the gateway (catalogs and views)
    gateway_cache_bytes: int = Field(default=32 * 1024 * 1024, ge=0)
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    drift_policy: Literal["ask", "deny"] = "ask"
    # the drift watch: each server a deployment references is re-discovered about this often
    drift_interval_s: float = Field(default=900.0, ge=1, le=7 * 86_400)

    # The console (DESIGN §14, §15): a session not seen for this long is signed out
    console_idle_s: float = Field(default=1800.0, gt=0, le=7 * 86_400)

    # Operations (DESIGN §11): shared rate limits, leader-free workers, shutdown
    # ``memory://`` (per replica) or ``redis://…``/``rediss://…`` (shared by every replica)
    rate_limit_storage_url: SecretStr = SecretStr("memory://")
    # ``class=LIMIT[|LIMIT…]`` entries, comma-separated; see hub.ratelimit.policy (empty: defaults)
    rate_limits: str = Field(default="", max_length=2048)
    workers: bool = True
    worker_poll_s: float = Field(default=1.0, gt=0, le=300)
    worker_concurrency: int = Field(default=4, ge=1, le=256)
    shutdown_grace_s: float = Field(default=30.0, ge=0, le=3600)

    # Serving
    max_request_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    # The bytes of begun, not yet received requests one process holds (hub.core.http_protocol)
    max_pending_request_bytes: int = Field(default=64 * 1024 * 1024, ge=1024 * 1024)
    # The connections one process holds at once (hub.core.connection_bound)
    max_connections: int = Field(default=10_000, ge=16, le=1_000_000)
    # The live pending approvals one agent may have; one more ask is refused (hub.approvals)
    max_pending_approvals: int = Field(default=50, ge=1, le=10_000)
    # The grants one principal may hold: its policy is read whole when it changes (hub.grants)
    max_grants_per_principal: int = Field(default=10_000, ge=100, le=100_000)
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    # Peers whose X-Forwarded-For/-Proto headers ``hub serve`` believes (IPs or CIDRs; default none)
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # The hub's external URL (OAuth redirect URI and client metadata); default http://HOST:PORT.
    public_url: str | None = Field(default=None, max_length=1900)

    # OAuth to upstream servers (DESIGN §9, §15)
    oauth_client_id_url: str | None = Field(default=None, max_length=2048)
    oauth_refresh_ahead_s: float = Field(default=300.0, ge=60, le=86_400)
    oauth_refresh_interval_s: float = Field(default=30.0, gt=0, le=3600)

    @field_validator("egress_allow_cidrs", "trusted_proxies", mode="before")
    @classmethod
    def _parse_cidrs(cls, value: object) -> object:
        return _split_csv(value)

    @field_validator("egress_allow_cidrs")
    @classmethod
    def _check_cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise ValueError(
                    "HUB_EGRESS_ALLOW_CIDRS holds an entry that is not a CIDR"
                ) from None
        return value

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _parse_origins(cls, value: object) -> object:
        return _split_csv(value)

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: list[str]) -> list[str]:
        # strict: uvicorn silently never matches a CIDR with host bits set ("10.0.0.1/8"), so such
        # a typo is refused here rather than leaving the proxy untrusted. No "*": trusting every
        # peer is spelled out as 0.0.0.0/0,::/0.
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=True)
            except ValueError:
                raise ValueError(
                    "HUB_TRUSTED_PROXIES holds an entry that is not an IP address or a CIDR"
                ) from None
        return value

    @field_validator("public_url", "oauth_client_id_url")
    @classmethod
    def _check_public_urls(cls, value: str | None) -> str | None:
        if value is None:
            return value
        scheme, sep, rest = value.partition("://")
        if scheme not in ("http", "https") or not sep or not rest or "#" in value:
            raise ValueError("must be an absolute http(s) URL without a fragment")
        return value

    @field_validator("rate_limit_storage_url")
    @classmethod
    def _check_rate_limit_storage(cls, value: SecretStr) -> SecretStr:
        # a SecretStr: a Redis URL may carry a password; the message never quotes the value
        scheme = value.get_secret_value().partition("://")[0].lower()
        if scheme not in ("memory", "redis", "rediss"):
            raise ValueError("HUB_RATE_LIMIT_STORAGE_URL must be memory://, redis:// or rediss://")
        return value

    @field_validator("extra_origins", mode="before")
    @classmethod
    def _parse_extra_origins(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except json.JSONDecodeError:
                raise ValueError("HUB_EXTRA_ORIGINS must be a JSON object") from None
        return value

    @model_validator(mode="after")
    def _pending_holds_a_request(self) -> Settings:
        if self.max_pending_request_bytes < self.max_request_bytes:
            raise ValueError(
                "HUB_MAX_PENDING_REQUEST_BYTES must be at least HUB_MAX_REQUEST_BYTES"
                " (a body larger than it could never arrive)"
            )
        return self

    @model_validator(mode="after")
    def _production_rules(self) -> Settings:
        if self.env != "production":
            return self
        problems: list[str] = []
        if self.secrets_generated:
            problems.append("generated development secrets are not allowed")
        if self.encryption_keys is None:
            problems.append("HUB_ENCRYPTION_KEYS is missing")
        if self.api_key_pepper is None:
            problems.append("HUB_API_KEY_PEPPER is missing")
        if "database_url" not in self.model_fields_set:
            problems.append("HUB_DATABASE_URL is missing")
        elif self.is_sqlite:
            problems.append("HUB_DATABASE_URL must not be SQLite in production")
        if self.allow_loopback:
            problems.append("HUB_ALLOW_LOOPBACK must not be set in production")
        if self.public_url is None and self.host in WILDCARD_HOSTS:
            problems.append(
                f"HUB_PUBLIC_URL is missing: the hub listens on {self.host!r}, an address no"
                " browser or authorization server can reach (the console's origin check, its"
                " cookies, approval links and OAuth redirects are built from the public URL)"
            )
        if problems:
            raise ValueError("production settings refused: " + "; ".join(problems))
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def migration_url(self) -> str:
        """The URL migrations run on: the owner's (``HUB_DATABASE_OWNER_URL``) or the app's."""
        return self.database_owner_url or self.database_url

    @property
    def public_base_url(self) -> str:
        """``HUB_PUBLIC_URL`` without a trailing slash, or ``http://HUB_HOST:HUB_PORT``."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def client_id_metadata_url(self) -> str:
        """``HUB_OAUTH_CLIENT_ID_URL``, or the client metadata document the hub serves."""
        return self.oauth_client_id_url or f"{self.public_base_url}/oauth/client-metadata.json"


def load_settings(**overrides: Any) -> Settings:
    """Read the environment; a validation problem becomes a ConfigError naming the fields."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        parts = []
        for err in exc.errors(include_input=False, include_context=False):
            loc = ".".join(str(p) for p in err["loc"])
            message = str(err["msg"]).removeprefix("Value error, ")
            parts.append(f"{loc}: {message}" if loc else message)
        raise ConfigError("invalid configuration: " + "; ".join(parts)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
