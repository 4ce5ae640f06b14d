"""The feedback loop's moves inside the simulator (``feedback.moves``).

Every feedback round, the moves the loop asks for — the ``MoveAdvisor``'s (a pod predicted to flourish
measurably better elsewhere) and the right-sizer's ``Infeasible`` resizes — are decided by
``harmonic.feedback.relocate.decide_moves`` on the world as the rescheduler sees it, with the world's
profile as the what-if scheduler, and the accepted ones are evicted through the in-memory Eviction API
(PodDisruptionBudgets apply); the controllers recreate the pods and the scheduler places them. Before
each eviction the node the what-if chose is reserved for the pod's owner in the world's scheduler
(``harmonic.scheduler.reservations``, ``reservationSeconds``), exactly as ``harmonic run
--feedback-moves`` reserves it, so the replacement is nominated there; each reservation's outcome
(landed, fell back, expired, cancelled) is counted and logged. Without ``feedback.moves`` the asks are
only logged, as recommendations.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from harmonic.api.pod import Pod
from harmonic.feedback.relocate import PLUGIN, MoveAsk, decide_moves
from harmonic.rescheduler.framework import RunLog
from harmonic.rescheduler.runner import remember
from harmonic.scheduler.reservations import OUTCOMES, Reservation, describe
from harmonic.sim.scenario import FeedbackMovesSpec

if TYPE_CHECKING:
    from harmonic.sim.engine import World


class SimMoves:
    def __init__(self, world: World, spec: FeedbackMovesSpec | None) -> None:
        self.world = world
        self.spec = spec
        self.recent: dict[str, float] = {}
        self.counts: Counter[str] = Counter()
        #: Per workload: asked, executed, refused, and ``home`` — refused because the profile's own
        #: scheduler would put the replacement back on the node the pod runs on.
        self.by_workload: dict[str, Counter[str]] = {}
        #: Nodes that received moved pods, with how many.
        self.targets: Counter[str] = Counter()
        #: (workload, decision text) for ``harmonic model --explain``.
        self.log: deque[tuple[str, str]] = deque(maxlen=1000)
        #: Reservations of replacements by outcome.
        self.reserved: Counter[str] = Counter()

    def ask(self, asks: list[tuple[str, MoveAsk]]) -> None:
        """``asks``: (workload, ask) pairs of this round."""
        w = self.world
        now = w.clock.now()
        for workload, a in asks:
            self.counts["asked"] += 1
            self.by_workload.setdefault(workload, Counter())["asked"] += 1
            if self.spec is None or not self.spec.execute:
                self.log.append((workload, f"t={now:g} {a.why} (recommended; moves are not executed)"))
        if self.spec is None or not self.spec.execute or not asks:
            return
        from harmonic.plugins.registry import default_registry
        from harmonic.sim.rescheduler import REASON_RESCHEDULED, cluster_state

        state = cluster_state(w)
        outcomes, log = decide_moves(
            [a for _, a in asks],
            state,
            w.run_spec.config.profiles[0],
            default_registry(),
            services={k: v for k, v in w.scheduler.services.items() if k != "nominator"},
            recent=self.recent,
            max_per_run=self.spec.max_per_round,
            cooldown=self.spec.cooldown,
        )
        done = []
        for (
            (workload, _),
            out,
        ) in zip(asks, outcomes, strict=True):
            mine = self.by_workload[workload]
            if out.refused:
                self.counts["refused"] += 1
                mine["refused"] += 1
                node = (w.cluster.pods.get(out.pod) or {}).get("spec", {}).get("nodeName")
                mine["home"] += int(out.refused.startswith(f"the scheduler would place it on {node},"))
                self.log.append((workload, f"t={now:g} {out.why}: not moved ({out.refused})"))
                continue
            e = next(e for e in log.evictions if e.pod.key == out.pod)
            held = self._reserve(workload, e.pod, out.to, state.pods)
            w._deleting[out.pod] = REASON_RESCHEDULED
            if w.cluster.evict(e.pod, f"moved by {PLUGIN}") is not None:
                w._deleting.pop(out.pod, None)
                if held is not None:
                    w.scheduler.reservations.cancel(held)
                self.counts["refused"] += 1
                mine["refused"] += 1
                self.log.append((workload, f"t={now:g} {out.why}: not moved (the Eviction API refused)"))
                continue
            done.append(e)
            self.counts["executed"] += 1
            mine["executed"] += 1
            self.targets[out.to] += 1
            where = (
                f"replacement reserved on {out.to} for {self.spec.reservation_seconds:g} s"
                if held is not None
                else f"replacement not reserved (the what-if placed it on {out.to})"
            )
            self.log.append((workload, f"t={now:g} {out.why}: moved, {where}"))
        remember(self.recent, RunLog(evictions=done), now)

    def _reserve(self, workload: str, pod: Pod, node: str, pods: list[Pod]) -> Reservation | None:
        """Hold the what-if's node for the replacement of ``pod``, before the eviction creates it."""
        owner = pod.controller
        if self.spec is None or self.spec.reservation_seconds <= 0 or owner is None or not node:
            return None
        known = frozenset(p.uid for p in pods if p.controller is not None and p.controller.uid == owner.uid)
        reservations = self.world.scheduler.reservations
        # the world's scheduler exists only once the run starts
        reservations.on_outcome = self._reservation_ended
        return reservations.reserve(
            owner.uid, node, self.spec.reservation_seconds, pod.key, known, tag=workload
        )

    def _reservation_ended(self, r: Reservation, outcome: str, pod: str, node: str) -> None:
        self.reserved[outcome] += 1
        assert self.spec is not None
        now = self.world.clock.now()
        text = describe(r, outcome, pod, node, self.spec.reservation_seconds)
        self.log.append((r.tag, f"t={now:g} {text}"))

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: self.counts[k] for k in ("asked", "executed", "refused")}
        if self.spec is not None and self.spec.execute:
            out["target_nodes"] = len(self.targets)
            res = self.world.scheduler.reservations
            still = sum(len(held) for held in res.open.values()) + len(res.taken)
            out["reservations"] = {**{k: self.reserved[k] for k in OUTCOMES}, "open_at_end": still}
            out["workloads"] = {
                wl: {k: c[k] for k in ("asked", "executed", "refused", "home")}
                for wl, c in sorted(self.by_workload.items())
            }
        return out
