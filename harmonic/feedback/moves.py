"""Move recommendations: a pod that the learnt model predicts would flourish measurably better on
another node.

For every pod of a workload with reports, the workload's own learnt row (``InterferenceLearner
.workload_estimate``) predicts its slowdown on each live node from that node's class CPU shares (the
pod's own share taken out where it runs) — one matrix-vector product over all nodes. Candidates are
the nodes with free CPU for the pod's request; the rescheduler would still check every filter.

A move costs flourishing: the pod restarts, and for ``restartSeconds`` it serves nothing (as Pollux
prices re-allocation by the time a job loses restarting). Over ``horizonSeconds`` the gain must pay
for that: the predicted fall of the slowdown, relative to the pod's cost ``1 + slowdown``, must exceed
``restartSeconds / horizonSeconds`` and ``minGain``, and exceed twice the standard deviation of the
prediction where the pod runs (hysteresis: an uncertain model recommends nothing). One
recommendation per workload per ``cooldownSeconds``. Recommendations are reported (the decision log of
``harmonic model --explain``, metrics.json's ``move_recommendations``); in the simulator with
``feedback.moves``, and live with ``harmonic run --feedback-moves``, they are asks the rescheduler's
evictor decides (``relocate``; ``sim.feedback_moves``, ``moves_live``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from harmonic.signals.feedback.learning import InterferenceLearner
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.identity import WorkloadKey


@dataclass(frozen=True)
class MoveSettings:
    min_gain: float = 0.1
    restart_seconds: float = 30.0
    horizon_seconds: float = 3600.0
    cooldown_seconds: float = 600.0


@dataclass(frozen=True)
class MoveAdvice:
    time: float
    workload: str
    pod: str
    node: str
    target: str
    #: Predicted slowdown where the pod runs, its standard deviation, and on the target.
    here: float
    here_sd: float
    there: float
    #: Relative gain (fall of 1 + slowdown) and the restart's share of the horizon it must beat.
    gain: float
    cost: float
    #: The nodes where the predicted gain would pay for the move (``target`` the best of them).
    worth: tuple[str, ...] = ()

    def describe(self) -> str:
        return (
            f"move {self.pod} from {self.node} (best: {self.target}): predicted slowdown "
            f"{self.here:.2f}±{self.here_sd:.2f} -> {self.there:.2f}, gain {self.gain:.0%} > restart cost "
            f"{self.cost:.0%} of the horizon"
        )

    def explain(self) -> str:
        return f"t={self.time:g} {self.describe()} (recommended; not executed)"


@dataclass
class MoveAdvisor:
    settings: MoveSettings = field(default_factory=MoveSettings)
    log: deque[MoveAdvice] = field(default_factory=lambda: deque(maxlen=1000))
    issued: int = 0
    _last: dict[WorkloadKey, float] = field(default_factory=dict)

    def advise(self, view: PlacementView, learner: InterferenceLearner, now: float) -> list[MoveAdvice]:
        s = self.settings
        cost = s.restart_seconds / s.horizon_seconds
        slots, names, shares, free = view.nodes()
        if not len(slots):
            return []
        out: list[MoveAdvice] = []
        for workload, pods in view.by_workload().items():
            last = self._last.get(workload)
            if last is not None and now - last < s.cooldown_seconds:
                continue
            est = learner.workload_estimate(workload)
            if est is None:
                continue
            predicted = shares @ est.mean  # [nodes]: a newcomer's slowdown on each node
            best: MoveAdvice | None = None
            for pod in pods:
                here = view.place(pod.key)
                if here is None:
                    continue
                at = names.index(here.node)
                now_sd = float(here.neighbours @ est.mean)
                spread = float(np.sqrt(np.square(here.neighbours * est.sd).sum()))
                fits = free >= float(pod.nonzero_cpu)
                fits[at] = False
                if not fits.any():
                    continue
                cand = np.where(fits, predicted, np.inf)
                j = int(np.argmin(cand))
                gain = (now_sd - float(cand[j])) / (1.0 + now_sd)
                if gain > max(cost, s.min_gain) and now_sd - float(cand[j]) > 2 * spread:
                    # Every node that would pay for the move, not only the best: where the scheduler
                    # would really put the replacement must be one of them.
                    worth = (now_sd - cand > 2 * spread) & (
                        (now_sd - cand) / (1.0 + now_sd) > max(cost, s.min_gain)
                    )
                    advice = MoveAdvice(
                        now,
                        str(workload),
                        pod.key,
                        here.node,
                        names[j],
                        now_sd,
                        spread,
                        float(cand[j]),
                        gain,
                        cost,
                        tuple(names[int(k)] for k in np.flatnonzero(worth)),
                    )
                    if best is None or advice.gain > best.gain:
                        best = advice
            if best is not None:
                out.append(best)
                self._last[workload] = now
        self.log.extend(out)
        self.issued += len(out)
        return out
