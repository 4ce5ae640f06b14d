"""Moves the feedback loop asks for, decided through the rescheduler's own machinery.

A move is asked for when the learnt model predicts a pod flourishes measurably better elsewhere
(``moves.MoveAdvisor``) or when an in-place resize of the pod is ``Infeasible`` on its node. Each ask
goes through the rescheduler's ``Evictor`` exactly as a rescheduler plugin's would
(``harmonic.rescheduler.framework``): the cool-down (a pod moved recently, or its replacement, stays),
the rate limits (``maxPerRun`` evictions per round; per node and per namespace ones as the policy's),
the PodDisruptionBudgets, the default evictor's protections (system-critical, DaemonSet, static,
unreplicated pods stay), and the no-churn rule — the profile's scheduler, run on the what-if snapshot
without the pod, must place its replacement on another node, and, for a move the learnt model asked
for, on one of the nodes it predicts would pay for the move (``MoveAsk.nodes``). The what-if placement is the reserved
target: later asks of the same round see it. Accepted moves are evictions the caller executes
(the simulator through its in-memory Eviction API, a live loop through ``pods/eviction``); refused ones
keep their reason, and its kind (``MoveOutcome.kind``), for the decision log and the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harmonic.api.pod import parse_pod
from harmonic.feedback.resize import plan_resize, with_resources
from harmonic.framework.config import Profile
from harmonic.framework.registry import Registry
from harmonic.rescheduler.budget import Budget, EvictionLimitError, Limits
from harmonic.rescheduler.evictor import DefaultEvictor, DefaultEvictorArgs
from harmonic.rescheduler.framework import Evictor, RunLog
from harmonic.rescheduler.runner import fits_elsewhere_on
from harmonic.rescheduler.state import ClusterState
from harmonic.rescheduler.whatif import WhatIf, replacement

#: The name moves carry in the rescheduler's logs and metrics.
PLUGIN = "FeedbackMoves"


@dataclass(frozen=True)
class MoveAsk:
    pod: str
    why: str
    #: The pod-level (CPU millicores, memory bytes) an Infeasible resize wanted: the replacement is
    #: placed with them, so the move lands where the resized pod fits.
    resources: tuple[float, float] | None = None
    #: The nodes worth moving to (the learnt model's); None: any node the replacement fits.
    nodes: frozenset[str] | None = None


@dataclass(frozen=True)
class MoveOutcome:
    pod: str
    why: str
    #: The node the replacement is reserved on ("" when refused), and the refusal otherwise.
    to: str
    refused: str = ""
    #: What refused it: "pdb" (a PodDisruptionBudget), "budget" (a rate, node or namespace limit),
    #: "cooldown", or "declined" (protected, gone, or no node worth the move); "" when accepted.
    kind: str = ""


def decide_moves(
    asks: Sequence[MoveAsk],
    state: ClusterState,
    profile: Profile,
    registry: Registry,
    *,
    services: Mapping[str, Any] | None = None,
    recent: dict[str, float] | None = None,
    max_per_run: int = 1,
    cooldown: float = 600.0,
    budget: Budget | None = None,
) -> tuple[list[MoveOutcome], RunLog]:
    """Each ask accepted (with its reserved target) or refused (with the reason), in order. ``budget``
    (else one of ``max_per_run`` evictions) is spent by the accepted ones: a caller deciding in several
    calls (one per profile) shares one."""
    whatif = WhatIf(profile, registry, state.nodes, state.pods, services=services, now=state.now)
    if budget is None:
        budget = Budget(Limits(rate=max_per_run), state.pdbs, state.pods)
    log = RunLog()
    de = DefaultEvictor(DefaultEvictorArgs(), state, fits_elsewhere_on(whatif))
    evictor = Evictor(
        state=state,
        whatif=whatif,
        budget=budget,
        filters=[de.filter],
        pre_eviction_filters=[de.pre_eviction_filter],
        log=log,
        recent=recent if recent is not None else {},
        cooldown=cooldown,
        profile=profile.scheduler_name,
    )
    by_key = {p.key: p for p in state.pods}
    out: list[MoveOutcome] = []
    for ask in asks:
        pod = by_key.get(ask.pod)
        if pod is None or not pod.node_name:
            out.append(MoveOutcome(ask.pod, ask.why, "", "the pod is no longer running", "declined"))
            continue
        if not (evictor.filter(pod) and evictor.pre_eviction_filter(pod)):
            out.append(MoveOutcome(ask.pod, ask.why, "", "protected by the default evictor", "declined"))
            continue
        if ask.resources is not None:
            plan = plan_resize(pod.raw, *ask.resources)
            if plan.patch is not None:
                # Same uid and node: the what-if removes the pod as it is and places it as resized.
                pod = parse_pod(with_resources(pod.raw, plan.patch))
        if ask.nodes is not None:
            # Where the scheduler would place the replacement, not where the model would like it.
            mark = whatif.checkpoint()
            whatif.remove(pod)
            dest, _ = whatif.place(replacement(pod))
            whatif.undo(mark)
            if dest not in ask.nodes:
                out.append(
                    MoveOutcome(
                        ask.pod,
                        ask.why,
                        "",
                        f"the scheduler would place it on {dest}, not a node worth it",
                        "declined",
                    )
                )
                continue
        skipped = len(log.skipped)
        try:
            moved = evictor.evict(pod, PLUGIN, ask.why, move=True)
        except EvictionLimitError as e:
            out.append(MoveOutcome(ask.pod, ask.why, "", f"rate limit: {e}", "budget"))
            continue
        if moved:
            out.append(MoveOutcome(ask.pod, ask.why, log.evictions[-1].to))
        else:
            reason = log.skipped[-1].reason if len(log.skipped) > skipped else "refused"
            kind = "cooldown" if evictor.cooling(pod) else "pdb" if budget.pdb_refusal(pod) else "declined"
            out.append(MoveOutcome(ask.pod, ask.why, "", reason, kind))
    return out, log
