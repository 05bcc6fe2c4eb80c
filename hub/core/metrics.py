"""Prometheus metrics of one hub replica (DESIGN §11), in a registry of its own per app.

Labels are bounded by construction: route templates (never raw paths, so no ids), methods, status
codes, effects, discovery reasons and key ids. Nothing tenant-specific and no secret is a label.

Under ``hub serve --workers N`` the processes share their values through files
(prometheus_client's multiprocess mode, switched on by :mod:`hub.cli.workers`), so whichever
process answers ``/metrics`` reports the sum over all of them: counters and histograms add up,
the kept-session gauge is the live processes' sum, and the gauges of shared state (read from the
database by each process) are the most recently read value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DRIFT_KINDS = ("changed", "gone", "renamed")  # hub.drift.compare's kinds: always exported
#: a pool wait, from a few checkouts ahead to the pool's whole POOL_WAIT_S (30 s: a 503)
POOL_WAIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30)
#: how late the loop ran a timer, from a busy moment to a loop held for seconds
LOOP_LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Histogram(
            "hub_request_duration_seconds",
            "Time to answer an HTTP request.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.decisions = Counter(
            "hub_policy_decisions_total",
            "Grant decisions taken to authorise hub routes, by effect.",
            ["effect"],
            registry=self.registry,
        )
        self.discoveries = Counter(
            "hub_discoveries_total",
            "Discoveries of upstream MCP servers, by outcome (ok or the failure reason).",
            ["outcome"],
            registry=self.registry,
        )
        self.upstream = Histogram(
            "hub_upstream_operation_seconds",
            "Time of one upstream operation, by operation: a whole discovery, or a tool call's "
            "upstream leg (every request of it, DNS included).",
            ["operation"],
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "hub_tool_calls_total",
            "Tool calls through the gateway, by outcome and error class.",
            ["outcome", "error_class"],
            registry=self.registry,
        )
        self.unreported_calls = Counter(
            "hub_direct_calls_unreported_total",
            "Direct-mode calls the hub allowed whose outcome the sidecar never reported before "
            "the decision expired (each audited as tool.call, outcome unreported).",
            registry=self.registry,
        )
        self.rotation_backlog = Gauge(
            "hub_credential_fields_not_under_active_key",
            "Encrypted credential fields still under a key other than the active one.",
            ["key_id"],
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )
        self._backlog_keys: set[str] = set()
        # read from the database when scraped (hub.core.scraped): the same value on every replica
        self.approvals_pending = Gauge(
            "hub_approvals_pending",
            "Approvals waiting for a person's decision (pending, not expired), over every tenant.",
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )
        self.drifted_tools = Gauge(
            "hub_drifted_tools",
            "Tools of deployed catalog versions marked drifted now, over every tenant, by kind "
            "(changed, gone, renamed).",
            ["kind"],
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )

        # rate limits (DESIGN §11): refusals, and checks admitted unchecked while storage is down
        self.rate_limited = Counter(
            "hub_rate_limit_refusals_total",
            "Requests refused by a rate limit, by limit class.",
            ["kind"],
            registry=self.registry,
        )
        self.rate_limit_fail_open = Counter(
            "hub_rate_limit_fail_open_total",
            "Requests admitted without a check because the rate-limit storage failed, by class.",
            ["kind"],
            registry=self.registry,
        )
        self.audit_lost = Counter(
            "hub_audit_events_lost_total",
            "Audit events never written: more kept than the writer holds while the database"
            " was away, or still kept when the process stopped.",
            registry=self.registry,
        )
        self.rate_limit_storage_errors = Counter(
            "hub_rate_limit_storage_errors_total",
            "Failed calls to the rate-limit storage (Redis down, slow or refusing).",
            registry=self.registry,
        )
        # leader-free workers (hub.core.workers)
        self.worker_runs = Counter(
            "hub_worker_runs_total",
            "Runs of worker jobs, by job kind and outcome (ok, error, lost).",
            ["job", "outcome"],
            registry=self.registry,
        )
        self.worker_lag = Histogram(
            "hub_worker_lag_seconds",
            "Time from a job falling due to a worker claiming it, by job kind.",
            ["job"],
            registry=self.registry,
            buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600),
        )
        self.worker_duration = Histogram(
            "hub_worker_run_seconds",
            "Time one run of a worker job took, by job kind.",
            ["job"],
            registry=self.registry,
        )
        # the drift watch (hub.drift): probes by outcome, tools newly drifted by kind
        self.drift_probes = Counter(
            "hub_drift_probes_total",
            "Drift-watch probes of upstream servers, by outcome (ok, unknown, rate_limited).",
            ["outcome"],
            registry=self.registry,
        )
        self.drift_tools = Counter(
            "hub_drift_tools_total",
            "Deployed tools found drifted (changed, gone or renamed upstream), by kind.",
            ["kind"],
            registry=self.registry,
        )

        # contention within the replica: the database pool's queue (hub.core.fairqueue, told
        # through pool_waited) and the event loop (hub.core.looplag)
        self.pool_wait = Histogram(
            "hub_db_pool_wait_seconds",
            "Time a database checkout that found every connection busy waited in the pool's "
            "queue, until it got one, ran out of time or was cancelled (PostgreSQL).",
            registry=self.registry,
            buckets=POOL_WAIT_BUCKETS,
        )
        self.pool_timeouts = Counter(
            "hub_db_pool_timeouts",
            "Database checkouts that waited the pool's whole timeout and got no connection "
            "(their requests answered 503).",
            registry=self.registry,
        )
        self.loop_lag = Histogram(
            "hub_event_loop_lag_seconds",
            "How late the event loop ran a timer: work holding the loop delays every request.",
            registry=self.registry,
            buckets=LOOP_LAG_BUCKETS,
        )

    def pool_waited(self, waited_s: float, ran_out: bool) -> None:
        """A checkout's wait in the pool's queue ended (a :data:`hub.core.fairqueue.WaitObserver`):
        after ``waited_s``, with no connection if it ``ran_out``."""
        self.pool_wait.observe(waited_s)
        if ran_out:
            self.pool_timeouts.inc()

    def set_rotation_backlog(self, remaining: Mapping[str, int]) -> None:
        """Fields per key id; a key id seen before and absent now reads 0 (with several
        processes, a label once written cannot be taken back, so none is removed)."""
        for key_id in self._backlog_keys - remaining.keys():
            self.rotation_backlog.labels(key_id=key_id).set(0)
        for key_id, count in remaining.items():
            self.rotation_backlog.labels(key_id=key_id).set(count)
        self._backlog_keys |= remaining.keys()

    def set_drifted_tools(self, by_kind: Mapping[str, int]) -> None:
        for kind in DRIFT_KINDS:
            self.drifted_tools.labels(kind=kind).set(by_kind.get(kind, 0))

    def count_upstream_sessions(self) -> Callable[[int, Mapping[str, int]], None]:
        """Register the gateway's kept upstream sessions' metrics (``hub.mcp.client.keeper``);
        the keeper calls the answer after each change with how many are idle now and what
        became of them so far, by event."""
        idle = Gauge(
            "hub_upstream_sessions_idle",
            "Handshake-era upstream sessions kept idle for the next tool call.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        events = Counter(
            "hub_upstream_session_events",
            "What became of kept upstream sessions: resumed, kept, surplus (over the per-key "
            "bound, deleted), expired (idle too long, deleted), forgotten (their key dropped) and "
            "lost (the server no longer knew them; a new session was opened).",
            ["event"],
            registry=self.registry,
        )
        counted: dict[str, int] = {}

        def changed(idle_now: int, so_far: Mapping[str, int]) -> None:
            idle.set(idle_now)
            for event, count in so_far.items():
                child = events.labels(event=event)
                if count > counted.get(event, 0):
                    child.inc(count - counted.get(event, 0))
                    counted[event] = count

        return changed

    def count_gateway_cache(self) -> Callable[[str, int], None]:
        """Register the gateway's kept catalogs and views (``hub.gateway.adapters.view``): the
        loader calls the answer on each miss with the tier and the bytes that tier keeps now."""
        kept = Gauge(
            "hub_gateway_cache_bytes",
            "Tool definitions (JSON bytes) kept for the gateway, by tier; the tiers share "
            "HUB_GATEWAY_CACHE_BYTES half and half.",
            ["tier"],
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        misses = Counter(
            "hub_gateway_cache_misses",
            "Catalogs read and views built because they were not kept, by tier: a rate that "
            "stays up says HUB_GATEWAY_CACHE_BYTES is too small for the deployments in use.",
            ["tier"],
            registry=self.registry,
        )
        for tier in ("catalogs", "views"):
            kept.labels(tier=tier).set(0)
            misses.labels(tier=tier)

        def missed(tier: str, kept_bytes: int) -> None:
            misses.labels(tier=tier).inc()
            kept.labels(tier=tier).set(kept_bytes)

        return missed

    def render(self) -> bytes:
        """The exposition text: this process's metrics, or, when the values are shared by the
        processes of ``hub serve --workers N`` (:mod:`hub.cli.workers`), every process's."""
        if values.ValueClass is values.MutexValue:
            return generate_latest(self.registry)
        shared = CollectorRegistry()
        MultiProcessCollector(shared)  # type: ignore[no-untyped-call]  # untyped upstream
        return generate_latest(shared)
