"""Moves carried out on a live cluster (``harmonic run --feedback-moves``).

The asks are the feedback loop's: a pod the learnt model predicts would flourish measurably better
elsewhere (``moves.MoveAdvisor``, its gain against the restart's cost and its hysteresis), and a pod
whose in-place resize the kubelet answered ``Infeasible`` (``InfeasibleResizes``, the right-sizer's
actuator, keeps them). In a round with asks:

1. The cluster is read as ``harmonic reschedule --once`` reads it (``LiveRescheduler.snapshot``:
   nodes, pods, PodDisruptionBudgets, namespaces).
2. Every ask is decided by ``relocate.decide_moves`` — the rescheduler's evictor, on a what-if copy
   of the cluster with the pod's own profile — against one ``Budget`` for the round: the live
   rescheduler's ``Limits`` (``maxPerRound`` as its rate, ``maxPerNode``, ``maxPerNamespace``) and the
   PodDisruptionBudgets' allowances, with its cool-down memory (``LiveRescheduler.recent``: a pod
   moved within ``cooldownSeconds``, or its replacement, stays). A pod another scheduler places is
   not moved: this scheduler cannot say where its replacement would go.
3. Each accepted move is evicted by ``LiveRescheduler.evict_answer``: the Eviction API
   (``pods/eviction``, uid precondition), fenced on the scheduler's lease, with its ``Descheduled``
   Event. The API server has the last word on PodDisruptionBudgets: a 429 is reported and the ask is
   tried again in the next rounds, for ``retrySeconds``; the pod is never deleted instead.

Before each eviction the node the what-if placed the replacement on is reserved for the pod's owner
(``Reservations`` of the scheduler, for ``reservationSeconds``); the first new pod of that owner the
scheduler handles is nominated to it as preemption nominates, and falls back to normal scheduling
when the node no longer fits. A failed eviction cancels the reservation. Its outcome (landed, fell
back, expired, cancelled) lands in the decision log and in ``harmonic_feedback_reservations_total``.
The reservation is written to the scheduler's store (``harmonic run``: a ConfigMap beside its lease,
``harmonic.cluster.reservation_store``) before the eviction, so a restart or a new leader still
honours it. Without a scheduler's reservations (``build`` alone) the replacement is not reserved.

Every ask, outcome and replacement lands in the decision log (``harmonic model --explain``) and in
``harmonic_feedback_moves_total{outcome}``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from harmonic.api.pod import parse_pod
from harmonic.cluster.transport import ApiStatusError, TransportError
from harmonic.feedback.moves import MoveAdvice, MoveSettings
from harmonic.feedback.relocate import MoveAsk, MoveOutcome, decide_moves
from harmonic.feedback.resize import INFEASIBLE, LiveActuator, Outcome
from harmonic.framework.args import PluginArgs
from harmonic.framework.config import Profile
from harmonic.framework.registry import Registry
from harmonic.framework.services import ACTIVATE, NOMINATOR, PODS, WAITING_PODS, MissingServiceError
from harmonic.rescheduler.budget import Budget
from harmonic.rescheduler.framework import Eviction, RunLog
from harmonic.rescheduler.live import LiveRescheduler
from harmonic.rescheduler.policy import Policy
from harmonic.rescheduler.runner import policy_limits, remember
from harmonic.rescheduler.state import ClusterState
from harmonic.scheduler.podlister import PodLister
from harmonic.scheduler.reservations import Reservation, Reservations, describe
from harmonic.signals.identity import workload_of
from harmonic.signals.metrics import FEEDBACK_MOVES, FEEDBACK_RESERVATIONS

if TYPE_CHECKING:
    from harmonic.cluster.events import EventRecorder
    from harmonic.cluster.kube import LiveScheduler
    from harmonic.cluster.leader import LeaderElector

log = logging.getLogger(__name__)

#: How long a move waits for its reservation to be written (``reservation_store``) before evicting.
RESERVATION_FLUSH_SECONDS = 5.0

#: (workload, ask) pairs, the unit the loop hands on.
Asks = list[tuple[str, MoveAsk]]


class MoveArgs(PluginArgs):
    """``--feedback-moves-args``: the advisor's price of a move and the budgets moves are made in."""

    min_gain: float = Field(default=0.1, ge=0)
    restart_seconds: float = Field(default=30.0, ge=0)
    horizon_seconds: float = Field(default=3600.0, gt=0)
    #: Count what a move adds to the pods on its target and to those it leaves (the arriving pod its freed
    #: room lets in; ``harmonic.feedback.moves``).
    price_neighbours: bool = True
    #: Pods started this recently count, beside the waiting ones, as arriving.
    refill_window_seconds: float = Field(default=600.0, ge=0)
    #: One ask per workload, and no move of a pod moved (or of its replacement), within it.
    cooldown_seconds: float = Field(default=600.0, ge=0)
    max_per_round: int = Field(default=1, ge=1)
    max_per_node: int | None = Field(default=None, ge=1)
    max_per_namespace: int | None = Field(default=None, ge=1)
    #: How long a move the API server refused (429) is tried again, once a round.
    retry_seconds: float = Field(default=600.0, ge=0)
    grace_period_seconds: int | None = Field(default=None, ge=0)
    #: How long the node the what-if chose is held for the moved pod's replacement.
    reservation_seconds: float = Field(default=60.0, gt=0)

    def settings(self) -> MoveSettings:
        return MoveSettings(
            self.min_gain,
            self.restart_seconds,
            self.horizon_seconds,
            self.cooldown_seconds,
            self.price_neighbours,
            self.refill_window_seconds,
        )


def advice_asks(advice: list[MoveAdvice]) -> Asks:
    return [(a.workload, MoveAsk(a.pod, a.describe(), nodes=frozenset(a.worth))) for a in advice]


class InfeasibleResizes(LiveActuator):
    """The right-sizer's actuator, keeping the pods whose resize was ``Infeasible`` on their node: each
    is a move asked for with the resized requests, so the replacement lands where they fit."""

    #: What becomes of the move, for the right-sizer's entry: ``moves_executed`` when
    #: ``--feedback-moves`` carries it out.
    move_note = "recommended; moves are not executed live"
    moves_executed = "asked of --feedback-moves: its outcome is in the move's own entry"

    def __init__(self, transport: Any, restart_seconds: float = MoveSettings.restart_seconds) -> None:
        super().__init__(transport)
        self.restart_seconds = restart_seconds
        self._asks: deque[tuple[str, MoveAsk]] = deque(maxlen=1000)

    def apply(self, pod: Mapping[str, Any], cpu_millis: float, memory_bytes: float) -> Outcome:
        out = super().apply(pod, cpu_millis, memory_bytes)
        if out.state == INFEASIBLE:
            p = parse_pod(pod)
            why = (
                f"move {p.key} off {p.node_name}: its resize to cpu {cpu_millis:.0f}m, memory "
                f"{memory_bytes / 2**20:.0f}Mi is Infeasible there; cost a restart "
                f"({self.restart_seconds:g} s without service)"
            )
            self._asks.append((str(workload_of(p)), MoveAsk(p.key, why, (cpu_millis, memory_bytes))))
        return out

    def take(self) -> Asks:
        out = list(self._asks)
        self._asks.clear()
        return out


@dataclass(frozen=True)
class _Pending:
    workload: str
    ask: MoveAsk
    since: float


class LiveMoves:
    def __init__(
        self,
        rescheduler: LiveRescheduler,
        profiles: Mapping[str, Profile],
        args: MoveArgs,
        clock: Callable[[], float],
        reservations: Reservations | None = None,
    ) -> None:
        self.rescheduler = rescheduler
        self.profiles = dict(profiles)
        self.args = args
        self.clock = clock
        self.limits = policy_limits(rescheduler.policy, args.max_per_round)
        self._retry: dict[str, _Pending] = {}
        #: (workload, text) of every ask, outcome and replacement, for ``harmonic model --explain``.
        self.log: deque[tuple[str, str]] = deque(maxlen=1000)
        self.reservations = reservations
        if reservations is not None:
            reservations.on_outcome = self._reservation_ended

    @classmethod
    def build(
        cls,
        transport: Any,
        profiles: Sequence[Profile],
        registry: Registry,
        args: MoveArgs,
        *,
        events: EventRecorder | None = None,
        leader: LeaderElector | None = None,
        services: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        reservations: Reservations | None = None,
    ) -> LiveMoves:
        """Moves through ``transport`` with the live rescheduler's eviction path; ``profiles``: the
        scheduler's, one of which places each moved pod's replacement, on the node held in
        ``reservations`` (the scheduler's) when given."""
        policy = Policy(
            profiles=(),
            max_per_node=args.max_per_node,
            max_per_namespace=args.max_per_namespace,
            grace_period_seconds=args.grace_period_seconds,
            source="--feedback-moves-args",
        )
        rescheduler = LiveRescheduler(
            transport,
            policy,
            profiles[0],
            registry,
            events=events,
            leader=leader,
            services=services,
            clock=clock,
        )
        return cls(rescheduler, {p.scheduler_name: p for p in profiles}, args, clock, reservations)

    @classmethod
    def for_scheduler(cls, live: LiveScheduler, registry: Registry, args: MoveArgs) -> LiveMoves:
        """Moves beside ``live``: its transport, its lease (every eviction is fenced on it), its Events,
        and its services — the models and cluster listers the what-if's plugins read — but not those
        of its scheduling thread (nominator, queue, waiting pods, pod lister): a round runs on the
        feedback loop's thread, and the what-if gets a pod lister of its own. Replacements are reserved
        in its scheduler's ``reservations`` (thread-safe)."""
        own = {s.name for s in (NOMINATOR, PODS, ACTIVATE, WAITING_PODS)}
        services = {k: v for k, v in live.scheduler.services.items() if k not in own}
        return cls.build(
            live.transport,
            live.config.profiles,
            registry,
            args,
            events=live.events,
            leader=live.elector,
            services=services,
            reservations=live.scheduler.reservations,
        )

    # ------------------------------------------------------------------ a round
    def round(self, asks: Asks) -> None:
        """Decide and carry out this round's asks and the retries due (off the scheduler's thread)."""
        now = self.clock()
        pending = self._due(asks, now)
        if not pending:
            return
        try:
            state = self.rescheduler.snapshot()
        except (ApiStatusError, TransportError) as e:
            log.warning("feedback moves: reading the cluster: %s; the asks are retried next round", e)
            self._retry.update(pending)
            return
        budget = Budget(self.limits, state.pdbs, state.pods)
        by_key = {p.key: p for p in state.pods}
        groups: dict[str, list[_Pending]] = {}
        for r in pending.values():
            pod = by_key.get(r.ask.pod)
            name = pod.scheduler_name if pod is not None else next(iter(self.profiles))
            if name not in self.profiles:
                why = f"its pods are placed by {name}, not by this scheduler"
                self._outcome(r.workload, now, MoveOutcome(r.ask.pod, r.ask.why, "", why, "declined"))
                continue
            groups.setdefault(name, []).append(r)
        pods = PodLister()
        for p in state.pods:
            if not p.is_terminal:
                pods.set(p)
        services = {**self.rescheduler.services, PODS.name: pods}
        done: list[Eviction] = []
        for name, items in groups.items():
            done += self._decide(name, items, state, budget, services, now)
        remember(self.rescheduler.recent, RunLog(evictions=done), now)

    def _due(self, asks: Asks, now: float) -> dict[str, _Pending]:
        """This round's asks by pod, after the refused ones still within ``retrySeconds``."""
        pending: dict[str, _Pending] = {}
        for key, r in self._retry.items():
            if now - r.since <= self.args.retry_seconds:
                pending[key] = r
            else:
                text = f"{r.ask.why}: given up after {self.args.retry_seconds:g} s of refusals"
                self._note(r.workload, now, text)
        self._retry.clear()
        for workload, ask in asks:
            pending[ask.pod] = _Pending(workload, ask, now)
        # The cool-down's memory needs nothing older than the cool-down.
        recent = self.rescheduler.recent
        for k in [k for k, t in recent.items() if now - t >= self.args.cooldown_seconds]:
            del recent[k]
        return pending

    def _decide(
        self,
        name: str,
        items: list[_Pending],
        state: ClusterState,
        budget: Budget,
        services: Mapping[str, Any],
        now: float,
    ) -> list[Eviction]:
        """Decide one profile's asks against the round's ``budget``, evict the accepted ones."""
        try:
            outcomes, decided = decide_moves(
                [r.ask for r in items],
                state,
                self.profiles[name],
                self.rescheduler.registry,
                services=services,
                recent=self.rescheduler.recent,
                cooldown=self.args.cooldown_seconds,
                budget=budget,
            )
        except MissingServiceError as e:
            why = f"the what-if scheduler of profile {name} cannot be built: {e}"
            for r in items:
                self._outcome(r.workload, now, MoveOutcome(r.ask.pod, r.ask.why, "", why, "error"))
            return []
        evictions = {e.pod.key: e for e in decided.evictions}
        done = []
        for r, out in zip(items, outcomes, strict=True):
            if out.refused:
                self._outcome(r.workload, now, out)
            elif self._evict(r, evictions[out.pod], state, now):
                done.append(evictions[out.pod])
        return done

    def _evict(self, r: _Pending, e: Eviction, state: ClusterState, now: float) -> bool:
        workload, ask = r.workload, r.ask
        held = self._reserve(workload, e, state)
        code, why = self.rescheduler.evict_answer(e)
        if not why:
            FEEDBACK_MOVES.labels("executed").inc()
            if held is not None:
                where = (
                    f"reserved on {e.to} for its replacement (the what-if's placement) for "
                    f"{self.args.reservation_seconds:g} s"
                )
            else:
                where = (
                    f"the replacement goes through normal scheduling (not reserved), the what-if placed it "
                    f"on {e.to}"
                )
            text = f"{ask.why}: moved — {e.pod.key} evicted from {e.node} through the Eviction API; {where}"
            self._note(workload, now, text)
            log.info("feedback move: %s", text)
            return True
        if held is not None and self.reservations is not None:
            self.reservations.cancel(held)
        if code in (404, 409):
            self._outcome(workload, now, MoveOutcome(ask.pod, ask.why, "", why, "declined"))
            return False
        # A 429 is a PodDisruptionBudget when the server says so (the Eviction API's own message), else
        # the server's throttling: both are tried again.
        kind = "pdb" if code == 429 and "disruption budget" in why else "error"
        retry = f"; tried again next round (for {self.args.retry_seconds:g} s)"
        self._outcome(workload, now, MoveOutcome(ask.pod, ask.why, "", why + retry, kind))
        self._retry[ask.pod] = r
        return False

    def _reserve(self, workload: str, e: Eviction, state: ClusterState) -> Reservation | None:
        """Hold the what-if's node for the replacement, before the eviction creates it."""
        owner = e.pod.controller
        if self.reservations is None or owner is None or not e.to:
            return None
        known = frozenset(
            p.uid for p in state.pods if p.controller is not None and p.controller.uid == owner.uid
        )
        held = self.reservations.reserve(
            owner.uid, e.to, self.args.reservation_seconds, e.pod.key, known, tag=workload
        )
        # Kept beyond this process before the pod goes (a failed write only loses that safety).
        self.reservations.flush(RESERVATION_FLUSH_SECONDS)
        return held

    def _reservation_ended(self, r: Reservation, outcome: str, pod: str, node: str) -> None:
        """The scheduler's word on a reservation (from its thread: the log and the counter are safe)."""
        FEEDBACK_RESERVATIONS.labels(outcome).inc()
        text = describe(r, outcome, pod, node, self.args.reservation_seconds)
        self._note(r.tag, self.clock(), text)
        log.info("feedback move: %s", text)

    def _outcome(self, workload: str, now: float, out: MoveOutcome) -> None:
        FEEDBACK_MOVES.labels(out.kind or "declined").inc()
        self._note(workload, now, f"{out.why}: not moved ({out.refused})")
        log.info("feedback move refused: %s: %s", out.pod, out.refused)

    def _note(self, workload: str, now: float, text: str) -> None:
        # Whole seconds since the epoch: ":g" would round a wall-clock time to hours.
        self.log.append((workload, f"t={now:.0f} {text}"))

    def decisions(self) -> list[tuple[str, str]]:
        return list(self.log)
