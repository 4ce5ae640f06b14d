"""The feedback loop's moves inside the simulator (``feedback.moves``).

Every feedback round, the moves the loop asks for — the ``MoveAdvisor``'s (a pod predicted to flourish
measurably better elsewhere) and the right-sizer's ``Infeasible`` resizes — are decided by
``harmonic.feedback.relocate.decide_moves`` on the world as the rescheduler sees it, with the world's
profile as the what-if scheduler, and the accepted ones are evicted through the in-memory Eviction API
(PodDisruptionBudgets apply); the controllers recreate the pods and the scheduler places them. Without
``feedback.moves`` the asks are only logged, as recommendations.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from harmonic.feedback.relocate import PLUGIN, MoveAsk, decide_moves
from harmonic.rescheduler.framework import RunLog
from harmonic.rescheduler.runner import remember
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

        outcomes, log = decide_moves(
            [a for _, a in asks],
            cluster_state(w),
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
            w._deleting[out.pod] = REASON_RESCHEDULED
            if w.cluster.evict(e.pod, f"moved by {PLUGIN}") is not None:
                w._deleting.pop(out.pod, None)
                self.counts["refused"] += 1
                mine["refused"] += 1
                self.log.append((workload, f"t={now:g} {out.why}: not moved (the Eviction API refused)"))
                continue
            done.append(e)
            self.counts["executed"] += 1
            mine["executed"] += 1
            self.targets[out.to] += 1
            self.log.append((workload, f"t={now:g} {out.why}: moved, replacement reserved on {out.to}"))
        remember(self.recent, RunLog(evictions=done), now)

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: self.counts[k] for k in ("asked", "executed", "refused")}
        if self.spec is not None and self.spec.execute:
            out["target_nodes"] = len(self.targets)
            out["workloads"] = {
                wl: {k: c[k] for k in ("asked", "executed", "refused", "home")}
                for wl, c in sorted(self.by_workload.items())
            }
        return out
