"""One rescheduler run: a policy over a cluster state, every decision checked on the what-if snapshot.

As descheduler's ``runProfiles``: the nodes are the ready nodes matching the policy's ``nodeSelector``
(nothing is done with fewer than two); every profile's ``deschedule`` plugins run, then every profile's
``balance`` plugins, all sharing one set of budgets and one what-if snapshot, so a later plugin sees
the moves of earlier ones. The result lists evictions (pod, from, to, why, gain), nominations and
plans; the caller executes them (live, simulator) or prints them (dry run) — the decisions are the
same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.config import Profile
from harmonic.framework.registry import Registry
from harmonic.rescheduler.budget import Budget, Limits
from harmonic.rescheduler.evictor import DefaultEvictor, is_ready
from harmonic.rescheduler.framework import (
    BalancePlugin,
    DeschedulePlugin,
    Evictor,
    Handle,
    ReschedulerPlugin,
    RunLog,
)
from harmonic.rescheduler.plugins.registry import rescheduler_registry
from harmonic.rescheduler.policy import Policy
from harmonic.rescheduler.selectors import parse_label_selector
from harmonic.rescheduler.state import ClusterState
from harmonic.rescheduler.whatif import WhatIf, replacement


@dataclass(frozen=True)
class RunOptions:
    #: Evictions allowed per run across every plugin (the global rate); None: only the policy's limits.
    max_evictions_per_run: int | None = None
    #: Seconds a moved pod, and its replacement, are not moved again.
    cooldown: float = 600.0
    #: Fewer ready nodes than this: do nothing (descheduler's guard against evicting on 0-1 nodes).
    min_nodes: int = 2
    #: False: descheduler's own behaviour — pods evicted to move them go without simulating where
    #: their replacement lands, and no cool-down (``reschedule --no-churn-check``, and the conformance
    #: tests, which check plugins against descheduler's tables).
    churn_check: bool = True


@dataclass
class RunResult:
    log: RunLog
    budget: Budget
    nodes: list[Node]

    @property
    def budget_violations(self) -> int:
        return self.budget.violations


def policy_nodes(policy: Policy, state: ClusterState) -> list[Node]:
    sel = parse_label_selector(policy.source, "nodeSelector", policy.node_selector)
    return [n for n in state.nodes if is_ready(n.raw) and sel.matches(n.labels)]


def policy_limits(policy: Policy, rate: int | None) -> Limits:
    """A run's limits: the policy's per node, per namespace and total ones, and the global ``rate``."""
    return Limits(policy.max_per_node, policy.max_per_namespace, policy.max_total, rate)


def fits_elsewhere_on(whatif: WhatIf) -> Callable[[Pod, list[str]], bool]:
    """The default evictor's nodeFit: whether the pod's replacement fits one of the named nodes."""

    def fits_elsewhere(pod: Pod, names: list[str]) -> bool:
        slots = np.asarray(
            [whatif.snapshot.slot_of[n] for n in names if n in whatif.snapshot.slot_of], dtype=np.int64
        )
        ok, _ = whatif.feasible(replacement(pod), slots)
        return len(ok) > 0

    return fits_elsewhere


def run_once(
    policy: Policy,
    state: ClusterState,
    profile: Profile,
    registry: Registry,
    *,
    services: Mapping[str, Any] | None = None,
    recent: dict[str, float] | None = None,
    options: RunOptions | None = None,
) -> RunResult:
    """Decide this run's evictions. ``recent`` (pod uid / ``owner:<uid>`` -> eviction time) carries the
    cool-down across runs; the caller adds the evictions it executes."""
    options = options or RunOptions()
    nodes = policy_nodes(policy, state)
    budget = Budget(policy_limits(policy, options.max_evictions_per_run), state.pdbs, state.pods)
    log = RunLog()
    if len(nodes) < options.min_nodes:
        log.plans.append(("", "skipped", "fewer than two ready nodes: evictions would only disrupt"))
        return RunResult(log, budget, nodes)
    whatif = WhatIf(profile, registry, state.nodes, state.pods, services=services, now=state.now)
    evicted: set[str] = set()
    registry_r = rescheduler_registry()
    fits_elsewhere = fits_elsewhere_on(whatif)
    instances: list[tuple[str, ReschedulerPlugin]] = []
    for prof in policy.profiles:
        de = DefaultEvictor(prof.evictor_args, state, fits_elsewhere)
        evictor = Evictor(
            state=state,
            whatif=whatif,
            budget=budget,
            filters=[de.filter],
            pre_eviction_filters=[de.pre_eviction_filter],
            log=log,
            recent=recent if recent is not None else {},
            cooldown=options.cooldown,
            profile=prof.name,
            evicted=evicted,
            churn_check=options.churn_check,
        )
        handle = Handle(state, evictor, whatif, prof.name, log, services=services or {})
        for point in ("deschedule", "balance"):
            for name in prof.plugins[point]:
                instances.append((point, registry_r[name](prof.args[name], handle)))
    for point in ("deschedule", "balance"):
        for p_point, plugin in instances:
            if p_point != point:
                continue
            if isinstance(plugin, DeschedulePlugin):
                plugin.deschedule(nodes)
            elif isinstance(plugin, BalancePlugin):
                plugin.balance(nodes)
    return RunResult(log, budget, nodes)


def remember(recent: dict[str, float], log: RunLog, now: float) -> None:
    """Start the cool-down of the pods a run evicted (and of their replacements, by controller)."""
    for e in log.evictions:
        recent[e.pod.uid] = now
        ctrl = e.pod.controller
        if ctrl is not None:
            recent[f"owner:{ctrl.uid}"] = now
