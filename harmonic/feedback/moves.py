"""Move recommendations: a pod that the learnt model predicts would flourish measurably better on
another node, counting what the move does to the pods around it.

For every pod of a workload with reports, the workload's own learnt row (``InterferenceLearner
.workload_estimate``) predicts its slowdown on each live node from that node's class CPU shares (the
pod's own share taken out where it runs) — one matrix-vector product over all nodes. Candidates are
the nodes with free CPU for the pod's request; the rescheduler would still check every filter.

A move also changes its neighbours' lot (``priceNeighbours``, on by default), priced with the learnt
class matrix — a pod of class *c* slowed by the matrix entry (*c* suffering the other's class) times
the other's CPU share of the node, weighted by *c*'s importance against the moved pod's own
(``DissonanceModel.importance``):

- the pods on the target take on the moved pod;
- the pods left behind may take on a stranger: the room the move frees on its node completes room for
  one more pod of a shape the cluster is receiving — a pod waiting (the scheduler's queue, where the
  caller gives it) or one started within ``refillWindowSeconds`` (10 min), since the next of that
  shape often arrives between two rounds — and the worst such pod is counted (CPU only: its other
  requests are not checked). Room that already holds one such pod is not spare: taking 3.9 free CPU to
  4.0 lets in a second 2-CPU pod.

The move's benefit is its own fall of slowdown minus both. What the pods left behind would shed is not
counted: under load the room the move frees is taken within minutes by whatever is pending, so that
relief would be priced over a horizon it does not last (counted, it made the advisor ask to move batch
pods away from latency-critical ones — three times the moves on ``sensitive``, 2% of the CPU-seconds
completed lost to restarts, and no gain in latency); what the newcomer would inflict is the price of
that same turnover.

A move costs flourishing: the pod restarts, and for ``restartSeconds`` it serves nothing (as Pollux
prices re-allocation by the time a job loses restarting). A pod that runs to completion (a Job's)
also loses the work it has done: the time since it started (``status.startTime``) is added to its
price, and one whose start is unknown is never recommended (its price cannot be told). Over
``horizonSeconds`` the benefit must pay for that: relative to the pod's cost ``1 + slowdown``, it must
exceed ``(restartSeconds + work lost) / horizonSeconds`` and ``minGain``, and exceed twice the
standard deviation of the pod's own prediction where it runs (hysteresis: an uncertain model
recommends nothing). One recommendation per workload per ``cooldownSeconds``. Recommendations are
reported (the decision log of ``harmonic model --explain``, metrics.json's ``move_recommendations``);
in the simulator with ``feedback.moves``, and live with ``harmonic run --feedback-moves``, they are
asks the rescheduler's evictor decides (``relocate``; ``sim.feedback_moves``, ``moves_live``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from harmonic.api.errors import ObjectError
from harmonic.api.pod import Pod
from harmonic.rescheduler.state import started_at
from harmonic.signals.feedback.learning import InterferenceLearner
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.identity import WorkloadKey


@dataclass(frozen=True)
class MoveSettings:
    min_gain: float = 0.1
    restart_seconds: float = 30.0
    horizon_seconds: float = 3600.0
    cooldown_seconds: float = 600.0
    #: Count what the move does to the pods on the node it leaves and on the node it joins.
    price_neighbours: bool = True
    #: Pods started this recently count, beside the waiting ones, as what the freed room lets in.
    refill_window_seconds: float = 600.0


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
    #: The summed (importance-weighted) slowdown the pods on ``target`` would take on, and the pods left
    #: on ``node`` from the worst arriving pod the freed room would let in.
    inflicted: float = 0.0
    let_in: float = 0.0
    #: The work a run-to-completion pod would lose (seconds since it started), part of ``cost``.
    lost_seconds: float = 0.0

    def describe(self) -> str:
        neighbours = f", +{self.inflicted:.2f} to the target's pods" if self.inflicted else ""
        if self.let_in:
            neighbours += f", +{self.let_in:.2f} to the pods left from an arriving pod the freed room lets in"
        lost = f" (with {self.lost_seconds:.0f} s of work lost)" if self.lost_seconds else ""
        return (
            f"move {self.pod} from {self.node} (best: {self.target}): predicted slowdown "
            f"{self.here:.2f}±{self.here_sd:.2f} -> {self.there:.2f}{neighbours}, gain {self.gain:.0%} > "
            f"restart cost{lost} {self.cost:.0%} of the horizon"
        )

    def explain(self) -> str:
        return f"t={self.time:g} {self.describe()} (recommended; not executed)"


@dataclass
class MoveAdvisor:
    settings: MoveSettings = field(default_factory=MoveSettings)
    log: deque[MoveAdvice] = field(default_factory=lambda: deque(maxlen=1000))
    issued: int = 0
    _last: dict[WorkloadKey, float] = field(default_factory=dict)

    def advise(
        self,
        view: PlacementView,
        learner: InterferenceLearner,
        now: float,
        started: Callable[[Pod], float | None] | None = None,
    ) -> list[MoveAdvice]:
        """``started``: when a pod started, on the clock of ``now`` (default: its ``status.startTime``
        in epoch seconds); None when unknown."""
        started = started or _status_start
        s = self.settings
        slots, names, shares, free = view.nodes()
        if not len(slots):
            return []
        counts, inv_alloc = view.neighbourhood()
        model = learner.model
        # What the room a move frees is taken by: the shapes the cluster is receiving, waiting or just
        # started — the next of them often arrives between two rounds.
        window = s.refill_window_seconds
        if s.price_neighbours and window > 0:
            arrivals = view.arrivals(started, now - window)
        else:
            arrivals = view.pending()
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
                lost = 0.0
                if _runs_to_completion(pod):
                    start = started(pod)
                    if start is None:
                        continue
                    lost = max(0.0, now - start)
                cost = (s.restart_seconds + lost) / s.horizon_seconds
                inflicted, let_in = np.zeros(len(names)), 0.0
                if s.price_neighbours:
                    felt = _felt_by(here.klass, model.matrix, model.importance)
                    inflicted, let_in = _neighbours_price(
                        float(pod.nonzero_cpu), here.klass, at, felt, counts, inv_alloc, free, arrivals
                    )
                benefit = now_sd - predicted - inflicted - let_in  # [nodes]
                worth = fits & (benefit > 2 * spread) & (benefit / (1.0 + now_sd) > max(cost, s.min_gain))
                if not worth.any():
                    continue
                j = int(np.argmax(np.where(fits, benefit, -np.inf)))
                advice = MoveAdvice(
                    now,
                    str(workload),
                    pod.key,
                    here.node,
                    names[j],
                    now_sd,
                    spread,
                    float(predicted[j]),
                    float(benefit[j]) / (1.0 + now_sd),
                    cost,
                    # Every node that would pay for the move, not only the best: where the scheduler
                    # would really put the replacement must be one of them.
                    tuple(names[int(k)] for k in np.flatnonzero(worth)),
                    float(inflicted[j]),
                    let_in,
                    lost,
                )
                if best is None or advice.gain > best.gain:
                    best = advice
            if best is not None:
                out.append(best)
                self._last[workload] = now
        self.log.extend(out)
        self.issued += len(out)
        return out


def _status_start(pod: Pod) -> float | None:
    """``status.startTime`` in epoch seconds; None when missing or malformed (the price is then unknown)."""
    try:
        return started_at(pod)
    except ObjectError:
        return None


def _runs_to_completion(pod: Pod) -> bool:
    owner = pod.controller
    return owner is not None and owner.kind == "Job"


def _neighbours_price(
    cpu: float,
    klass: int,
    at: int,
    felt: np.ndarray,
    counts: np.ndarray,
    inv_alloc: np.ndarray,
    free: np.ndarray,
    arrivals: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, float]:
    """What moving a pod (``cpu`` millicores, class ``klass``) off node index ``at`` costs its neighbours:
    per node, what that node's pods would take on if it went there; and what the pods left on ``at``
    would take on from the worst arriving pod its freed room lets in (0 when none)."""
    # Summed weighted slowdown of each node's pods per unit of the moved pod's share.
    inflicted: np.ndarray = cpu * inv_alloc * (counts @ felt[:, klass])
    arriving_class, arriving_cpu = arrivals
    # Let in: the freed room completes one more pod of that shape. Room that holds one already is not
    # spare — more of the same shape keep coming — so a move that takes 3.9 free CPU to 4.0 lets in a
    # second 2-CPU pod.
    admitted = np.floor((free[at] + cpu) / arriving_cpu) > np.floor(free[at] / arriving_cpu)
    if not admitted.any():
        return inflicted, 0.0
    left = counts[at].copy()
    left[klass] -= 1  # the pod itself
    per_share = left @ felt  # [aggressor classes]
    harm = arriving_cpu[admitted] * inv_alloc[at] * per_share[arriving_class[admitted]]
    return inflicted, float(harm.max())


def _felt_by(moved: int, matrix: np.ndarray, importance: np.ndarray) -> np.ndarray:
    """[victim class, aggressor class]: the slowdown one pod of the victim class takes per unit of node
    CPU share held by the aggressor class, weighted by the victim's importance against the moved pod's
    class's (unweighted when that class has none)."""
    own = float(importance[moved])
    weight = importance / own if own > 0 else np.ones_like(importance)
    out: np.ndarray = matrix * weight[:, None]
    return out
