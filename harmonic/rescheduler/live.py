"""The rescheduler against a live cluster: read the cluster, decide (``runner.run_once``), execute.

Each cycle reads nodes, pods, PodDisruptionBudgets and namespaces — from a ``ClusterCache`` (informers:
listed once, then watched) when given one, as ``harmonic reschedule`` in loop mode does; else by listing
them, as a single ``--once`` run does — decides as a dry run would, and —
unless ``dry_run`` — executes: for a plan, the pending pod's ``status.nominatedNodeName`` is set
first (the reservation), then its moves are evicted in order through the Eviction API
(``policy/v1``, with the pod's uid as precondition); other evictions go one by one.

A plan stops at its first surprise and is reported (``plans_aborted``), leaving the rest untouched:
a 429 (a PodDisruptionBudget, or the server's rate limit), any other API error, a moved pod already
gone (404/409), the pending pod deleted or bound elsewhere, the reserved node no longer able to take
it once the remaining moves are done, or the lease lost. No pod is lost: the only write that removes
a pod is an accepted eviction, after which its controller recreates it.

With a ``LeaderElector`` (a Lease of its own, not the scheduler's) only the leader acts, and every
write is fenced on the lease still being valid. ``metrics()`` renders descheduler's metric names
(``descheduler_pods_evicted``, ``descheduler_pods_evicted_total``, ``descheduler_loop_duration_seconds``)
and Harmonic's plan counters in Prometheus text format.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from harmonic.cluster.events import EventRecorder
from harmonic.cluster.leader import LeaderElector
from harmonic.cluster.transport import MERGE_PATCH, ApiStatusError, Transport, TransportError, object_path
from harmonic.framework.config import Profile
from harmonic.framework.registry import Registry
from harmonic.rescheduler.cache import ClusterCache
from harmonic.rescheduler.framework import Eviction, Nomination, RunLog
from harmonic.rescheduler.policy import Policy
from harmonic.rescheduler.runner import RunOptions, RunResult, remember, run_once
from harmonic.rescheduler.state import ClusterState, from_manifests

log = logging.getLogger(__name__)
CONTROLLER = "harmonic-rescheduler"
_LISTS = (
    ("v1", "nodes", "Node"),
    ("v1", "pods", "Pod"),
    ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    ("v1", "namespaces", "Namespace"),
)


@dataclass
class CycleReport:
    result: RunResult | None = None
    evicted: list[Eviction] = field(default_factory=list)
    failed: list[tuple[Eviction, str]] = field(default_factory=list)
    aborted: list[tuple[str, str]] = field(default_factory=list)
    nominated: list[Nomination] = field(default_factory=list)
    error: str = ""


class _Counters(Collector):
    """Counters with descheduler's exact names (prometheus_client would append ``_total``)."""

    def __init__(self) -> None:
        self.evicted: Counter[tuple[str, str, str, str, str]] = Counter()
        self.plans: Counter[str] = Counter()
        self._lock = threading.Lock()

    def eviction(self, result: str, e: Eviction) -> None:
        with self._lock:
            self.evicted[(result, e.plugin, e.pod.namespace, e.node, e.profile)] += 1

    def plan(self, outcome: str) -> None:
        with self._lock:
            self.plans[outcome] += 1

    def collect(self) -> Any:
        names = ("result", "strategy", "namespace", "node", "profile")
        with self._lock:
            evicted = dict(self.evicted)
            plans = dict(self.plans)
        for name in ("descheduler_pods_evicted", "descheduler_pods_evicted_total"):
            m = Metric(
                name,
                "Number of evicted pods, by the result, the strategy, the namespace, the node name and the profile.",
                "counter",
            )
            for key, v in evicted.items():
                m.add_sample(name, dict(zip(names, key, strict=True)), v)
            yield m
        m = Metric(
            "harmonic_rescheduler_plans",
            "Plans by outcome (started, completed, aborted, over budget, unresolvable).",
            "counter",
        )
        for outcome, v in plans.items():
            m.add_sample("harmonic_rescheduler_plans", {"outcome": outcome}, v)
        yield m


class LiveRescheduler:
    def __init__(
        self,
        transport: Transport,
        policy: Policy,
        profile: Profile,
        registry: Registry,
        *,
        interval: float = 120.0,
        dry_run: bool = False,
        options: RunOptions | None = None,
        events: EventRecorder | None = None,
        leader: LeaderElector | None = None,
        services: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        cache: ClusterCache | None = None,
    ) -> None:
        self.transport = transport
        self.cache = cache
        self.policy = policy
        self.profile = profile
        self.registry = registry
        self.interval = interval
        self.dry_run = dry_run
        self.options = options or RunOptions()
        self.events = events
        self.leader = leader
        self.services = dict(services or {})
        self.clock = clock
        self.recent: dict[str, float] = {}
        self.last_error = ""
        self.metrics_registry = CollectorRegistry()
        self.counters = _Counters()
        self.metrics_registry.register(self.counters)
        self.loop_seconds = Histogram(
            "descheduler_loop_duration_seconds",
            "Time taken to complete a full descheduling cycle",
            ["type"],
            registry=self.metrics_registry,
        )

    # ------------------------------------------------------------------ endpoints
    def metrics(self) -> bytes:
        return generate_latest(self.metrics_registry)

    def healthz(self) -> str | None:
        """Failing when the last cycle errored (the message says why)."""
        return self.last_error or None

    # ------------------------------------------------------------------ a cycle
    def snapshot(self) -> ClusterState:
        if self.cache is not None:
            if not self.cache.synced:
                raise TransportError("the cluster cache has not synced yet")
            return self.cache.state(self.clock())
        objs: list[Mapping[str, Any]] = []
        for api, plural, kind in _LISTS:
            body = self.transport.request("GET", object_path(api, plural))
            objs += [{**item, "kind": kind, "apiVersion": api} for item in body.get("items") or ()]
        return from_manifests(objs, now=self.clock())

    def cycle(self) -> CycleReport:
        report = CycleReport()
        start = time.monotonic()
        try:
            state = self.snapshot()
            result = run_once(
                self.policy,
                state,
                self.profile,
                self.registry,
                services=self.services,
                recent=self.recent,
                options=self.options,
            )
            report.result = result
            for _, outcome, _ in result.log.plans:
                if outcome in ("over budget", "unresolvable"):
                    self.counters.plan(outcome)
            if not self.dry_run:
                self.execute(result, state, report)
            self.last_error = ""
        except (ApiStatusError, TransportError) as e:
            report.error = self.last_error = f"reading the cluster: {e}"
            log.error("rescheduler cycle failed", extra={"error": str(e)})
        self.loop_seconds.labels("dry-run" if self.dry_run else "non-dry-run").observe(
            time.monotonic() - start
        )
        return report

    # ------------------------------------------------------------------ executing
    def _fenced(self) -> bool:
        return self.leader is None or self.leader.remaining() is not None

    def execute(self, result: RunResult, state: ClusterState, report: CycleReport) -> None:
        by_plan: dict[str, list[Eviction]] = {}
        for e in result.log.evictions:
            by_plan.setdefault(e.plan, []).append(e)
        nominations = {n.plan: n for n in result.log.nominations}
        for e in by_plan.pop("", []):
            why = self.evict(e)
            if why:
                report.failed.append((e, why))
            else:
                report.evicted.append(e)
        for plan, moves in by_plan.items():
            nom = nominations.get(plan)
            why = self.run_plan(plan, nom, moves, state, report)
            if why:
                report.aborted.append((plan, why))
                self.counters.plan("aborted")
                log.warning("plan aborted", extra={"plan": plan, "reason": why})
            else:
                self.counters.plan("completed")
        remember(self.recent, RunLog(evictions=list(report.evicted)), self.clock())

    def run_plan(
        self,
        plan: str,
        nom: Nomination | None,
        moves: list[Eviction],
        state: ClusterState,
        report: CycleReport,
    ) -> str:
        self.counters.plan("started")
        if nom is not None:
            if not self._fenced():
                return "lease lost"
            try:
                path = object_path("v1", "pods", nom.pod.namespace, nom.pod.name) + "/status"
                self.transport.request(
                    "PATCH", path, body={"status": {"nominatedNodeName": nom.node}}, content_type=MERGE_PATCH
                )
            except ApiStatusError as err:
                if err.code == 404:
                    return f"pending pod {nom.pod.key} was deleted"
                return f"nominating {nom.node} for {nom.pod.key}: {err}"
            except TransportError as err:
                return f"nominating {nom.node} for {nom.pod.key}: {err}"
            report.nominated.append(nom)
        for i, e in enumerate(moves):
            if nom is not None:
                why = self.still_reserved(nom, moves[i:], state)
                if why:
                    return why
            why = self.evict(e)
            if why:
                report.failed.append((e, why))
                return why
            report.evicted.append(e)
        return ""

    def still_reserved(self, nom: Nomination, remaining: list[Eviction], state: ClusterState) -> str:
        """Why the plan can no longer make room for the pending pod, or ""."""
        try:
            pod = self.transport.request("GET", object_path("v1", "pods", nom.pod.namespace, nom.pod.name))
            on_node = self.transport.request(
                "GET", object_path("v1", "pods"), query={"fieldSelector": f"spec.nodeName={nom.node}"}
            )
        except ApiStatusError as e:
            if e.code == 404:
                return f"pending pod {nom.pod.key} was deleted"
            return f"checking the reserved node: {e}"
        except TransportError as e:
            return f"checking the reserved node: {e}"
        if (pod.get("metadata") or {}).get("uid") != nom.pod.uid:
            return f"pending pod {nom.pod.key} was replaced"
        if (pod.get("spec") or {}).get("nodeName"):
            return f"pending pod {nom.pod.key} was bound to {pod['spec']['nodeName']}"
        node = next((n for n in state.nodes if n.name == nom.node), None)
        if node is None:
            return f"reserved node {nom.node} is gone"
        leaving = {e.pod.uid for e in remaining}
        others = from_manifests([{**p, "kind": "Pod"} for p in on_node.get("items") or ()]).pods
        used: Counter[str] = Counter()
        for p in others:
            if p.uid in leaving or p.is_terminal:
                continue
            used.update(p.requests)
            used["pods"] += 1
        need = Counter(nom.pod.requests)
        need["pods"] += 1
        for r, v in need.items():
            if used[r] + v > node.allocatable.get(r, 0):
                return f"reserved node {nom.node} was filled ({r})"
        return ""

    def evict(self, e: Eviction) -> str:
        """Evict through the Eviction API; "" on success, else why not (counted and reported)."""
        return self.evict_answer(e)[1]

    def evict_answer(self, e: Eviction) -> tuple[int, str]:
        """``evict`` with the HTTP status of a refusal (429: a PodDisruptionBudget or the server's rate
        limit; 404/409: the pod gone or replaced); 0 with no refusal from the server."""
        if not self._fenced():
            self.counters.eviction("error", e)
            return 0, "lease lost"
        options: dict[str, Any] = {"preconditions": {"uid": e.pod.uid}}
        if self.policy.grace_period_seconds is not None:
            options["gracePeriodSeconds"] = self.policy.grace_period_seconds
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": e.pod.name, "namespace": e.pod.namespace},
            "deleteOptions": options,
        }
        path = object_path("v1", "pods", e.pod.namespace, e.pod.name) + "/eviction"
        try:
            self.transport.request("POST", path, body=body)
        except (ApiStatusError, TransportError) as err:
            code = err.code if isinstance(err, ApiStatusError) else 0
            why = {
                404: f"pod {e.pod.key} is gone",
                409: f"pod {e.pod.key} was replaced",
                429: f"eviction of {e.pod.key} refused (429): {err}",
            }.get(code, f"evicting {e.pod.key}: {err}")
            self.counters.eviction("error", e)
            if self.events is not None and self.policy.eviction_failure_event_notification:
                self.events.event(
                    e.pod.raw,
                    "Warning",
                    "EvictionFailed",
                    "Descheduled",
                    f"pod eviction from {e.node} node by {CONTROLLER} failed: {why}",
                    CONTROLLER,
                )
            return code, why
        self.counters.eviction("success", e)
        if self.events is not None:
            where = f", to be placed on {e.to}" if e.to else ""
            self.events.event(
                e.pod.raw,
                "Normal",
                "Descheduled",
                "Descheduled",
                f"pod evicted from {e.node} node by {CONTROLLER} ({e.plugin}: {e.why}{where})",
                CONTROLLER,
            )
        return 0, ""

    # ------------------------------------------------------------------ the loop
    def run(self, stop: threading.Event) -> None:
        """Cycle every ``interval`` while leading (always, without an elector) until ``stop``."""
        while not stop.is_set():
            if self.leader is None or self.leader.is_leader:
                self.cycle()
            if self.leader is not None and self.leader.lost.is_set():
                return
            stop.wait(self.interval)
