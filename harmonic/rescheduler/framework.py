"""Rescheduler plugin interfaces (descheduler's ``deschedule`` and ``balance``) and the evictor they call.

``Evictor.evict`` is the only way a plugin removes a pod. It applies, in order: the cool-down (a pod
moved recently, or its replacement, stays), descheduler's limits (``EvictionLimitError`` for node /
namespace / total, which plugins handle as descheduler's do), the PodDisruptionBudgets, and, for a pod
evicted *to move it*, the no-churn rule: the profile's scheduler, simulated on the what-if snapshot
without the pod, must place its replacement on another node, and better by the plugin's
``min_gain`` (score points of the profile's weighted total) when the current node is still feasible.
Accepted moves are applied to the what-if snapshot, so every later decision of the run sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.args import NoArgs, PluginArgs
from harmonic.rescheduler.budget import Budget, EvictionLimitError
from harmonic.rescheduler.state import ClusterState, created_at
from harmonic.rescheduler.whatif import WhatIf, replacement


@dataclass
class Eviction:
    pod: Pod
    node: str
    plugin: str
    profile: str
    why: str
    #: Where the scheduler would place the replacement ("" when not simulated: evict-by-design plugins).
    to: str = ""
    #: Score gain of ``to`` over the current node (profile's weighted total), None when not comparable.
    gain: float | None = None
    #: The plan this eviction belongs to (MakeRoomForPending, Consolidate), "" otherwise.
    plan: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "pod": self.pod.key,
            "from": self.node,
            "to": self.to,
            "why": self.why,
            "gain": self.gain,
            "plugin": self.plugin,
            "profile": self.profile,
            "plan": self.plan,
        }


@dataclass
class Skipped:
    pod: Pod
    plugin: str
    reason: str


@dataclass
class Nomination:
    pod: Pod
    node: str
    plan: str


@dataclass
class RunLog:
    evictions: list[Eviction] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    nominations: list[Nomination] = field(default_factory=list)
    #: (plan id, outcome, detail) of every plan considered.
    plans: list[tuple[str, str, str]] = field(default_factory=list)


class Evictor:
    def __init__(
        self,
        *,
        state: ClusterState,
        whatif: WhatIf,
        budget: Budget,
        filters: Sequence[Callable[[Pod], bool]],
        pre_eviction_filters: Sequence[Callable[[Pod], bool]],
        log: RunLog,
        recent: dict[str, float],
        cooldown: float,
        profile: str,
        evicted: set[str] | None = None,
        churn_check: bool = True,
    ) -> None:
        self.state = state
        self.whatif = whatif
        self.budget = budget
        self._filters = filters
        self._pre = pre_eviction_filters
        self.log = log
        self.recent = recent
        self.cooldown = cooldown
        self.profile = profile
        #: Pods evicted in this run, shared by every profile's evictor.
        self.evicted: set[str] = evicted if evicted is not None else set()
        self.churn_check = churn_check

    def filter(self, pod: Pod) -> bool:
        return pod.uid not in self.evicted and all(f(pod) for f in self._filters)

    def pre_eviction_filter(self, pod: Pod) -> bool:
        return all(f(pod) for f in self._pre)

    def cooling(self, pod: Pod) -> bool:
        """Moved within the cool-down, or created as the replacement of a pod moved within it."""
        now = self.state.now
        t = self.recent.get(pod.uid)
        if t is not None and now - t < self.cooldown:
            return True
        ctrl = pod.controller
        if ctrl is None:
            return False
        t = self.recent.get(f"owner:{ctrl.uid}")
        created = created_at(pod)
        return t is not None and now - t < self.cooldown and (created is None or created >= t)

    def evict(
        self,
        pod: Pod,
        plugin: str,
        why: str,
        *,
        move: bool,
        min_gain: float = 0.0,
        plan: str = "",
        unplaceable_ok: bool = False,
    ) -> bool:
        """Evict ``pod`` (recorded; the runner executes or prints). False when refused or pointless;
        ``EvictionLimitError`` when a limit is reached. ``unplaceable_ok``: the plugin asked for the
        eviction even if the replacement fits on no node (descheduler's topologyBalanceNodeFit: false,
        which leaves the pending replacement to the cluster autoscaler), so no churn check refuses it
        for that; it still must not land back on its node."""
        if pod.uid in self.evicted:
            return False
        if move and self.churn_check and self.cooling(pod):
            self.log.skipped.append(Skipped(pod, plugin, "moved within the cool-down"))
            return False
        self.budget.check_limits(pod)
        refusal = self.budget.pdb_refusal(pod)
        if refusal:
            self.log.skipped.append(Skipped(pod, plugin, refusal))
            return False
        to, gain = "", None
        if move and self.churn_check:
            verdict = self.simulate_move(pod, min_gain, unplaceable_ok)
            if isinstance(verdict, str):
                self.log.skipped.append(Skipped(pod, plugin, verdict))
                return False
            to, gain = verdict
        else:
            self.whatif.remove(pod)
        self.budget.record(pod)
        self.evicted.add(pod.uid)
        self.log.evictions.append(Eviction(pod, pod.node_name, plugin, self.profile, why, to, gain, plan))
        return True

    def record_move(self, pod: Pod, src: str, dst: str, plugin: str, why: str, plan: str) -> None:
        """An eviction of a plan already applied to the what-if snapshot and checked against the
        budgets as a whole (``Budget.can_take``)."""
        self.budget.check_limits(pod)
        self.budget.record(pod)
        self.evicted.add(pod.uid)
        self.log.evictions.append(Eviction(pod, src, plugin, self.profile, why, dst, None, plan))

    def simulate_move(
        self, pod: Pod, min_gain: float, unplaceable_ok: bool = False
    ) -> tuple[str, float | None] | str:
        """Where the replacement goes (applied to the what-if snapshot) and the gain, or why not;
        ``("", None)`` for a replacement that fits nowhere when ``unplaceable_ok`` (it stays pending)."""
        w = self.whatif
        node = w.node_of(pod) or pod.node_name
        mark = w.checkpoint()
        w.remove(pod)
        repl = replacement(pod)
        dest, scores = w.place(repl)
        if dest is None:
            if unplaceable_ok:
                return "", None
            w.undo(mark)
            return "no churn: the replacement would fit on no node"
        if dest == node:
            w.undo(mark)
            return "no churn: the replacement would land back on the same node"
        gain = None
        if node in scores:
            gain = float(scores[dest] - scores[node])
            if gain < min_gain:
                w.undo(mark)
                return f"no churn: gain {gain:g} below the plugin's threshold {min_gain:g}"
        w.add(repl, dest)
        return dest, gain


class ReschedulerPlugin:
    """Base of every rescheduler plugin. ``NAME`` is the name written in the policy's plugin sets."""

    NAME: ClassVar[str] = ""
    Args: ClassVar[type[PluginArgs]] = NoArgs
    #: Extension points the plugin implements: "deschedule", "balance", "filter", "preEvictionFilter".
    POINTS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle


class DeschedulePlugin(ReschedulerPlugin):
    POINTS = ("deschedule",)

    def deschedule(self, nodes: list[Node]) -> None:
        raise NotImplementedError


class BalancePlugin(ReschedulerPlugin):
    POINTS = ("balance",)

    def balance(self, nodes: list[Node]) -> None:
        raise NotImplementedError


@dataclass
class Handle:
    """What a rescheduler plugin may use: the cluster state, the evictor, the what-if scheduler."""

    state: ClusterState
    evictor: Evictor
    whatif: WhatIf
    profile: str
    log: RunLog
    #: The whole policy's own settings a plan may need (in-flight plans, pending threshold...).
    extras: dict[str, Any] = field(default_factory=dict)
    #: The run's services by name (e.g. ``providers.METRICS_SERVICE``), as the scheduler's plugins get them.
    services: Mapping[str, Any] = field(default_factory=dict)

    def pods_on(self, node: str, terminal: bool = False) -> list[Pod]:
        return [p for p in self.state.pods_on(node, terminal) if p.uid not in self.evictor.evicted]


def evict_each(
    handle: Handle, pods: Sequence[Pod], plugin: str, why: str, *, move: bool, node_limit: str = "break"
) -> bool:
    """Evict pods in order with descheduler's limit handling: a node limit stops this node's loop
    (``node_limit="break"``) or skips the pod (``"continue"``); the total limit stops the plugin
    (returns False)."""
    for p in pods:
        try:
            handle.evictor.evict(p, plugin, why, move=move)
        except EvictionLimitError as e:
            if e.scope == "total":
                return False
            if e.scope == "node" and node_limit == "break":
                return True
    return True
