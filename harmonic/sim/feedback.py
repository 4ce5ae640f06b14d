"""The feedback loop inside the simulator: simulated applications report how they flourish, through a
simulated Prometheus, and the loop learns from the reports as it would on a live cluster.

``SimulatedApps`` is the applications plus their Prometheus: every ``feedback.interval`` of virtual
time a query for the scenario's flourish metric returns, per running pod (best-effort pods have no
objective and report nothing), the pod's cost as the ground truth has it — a topology service's mean
call latency in ms, any other pod's seconds per unit of work (1 when undisturbed) — times
``1 + slowdown``, with relative noise. The loop reads it with the ordinary ``FlourishSource``, stores
each report with the placement in force (``PlacementView`` over the scheduler's snapshot) and feeds the
``InterferenceLearner``. For the profiles that learn (``feedback.learn``), the learner's model is the
``dissonance`` handle service the Dissonance plugin reads; the other profiles only observe.

The judge (``Yardstick``) is apart: it keeps, per report, the truth's noise-free slowdown, and
measures the learned matrix against the truth's best linear fit over the same placements
(docs/feedback.md, "How the loop is judged"). Nothing here leaks truth into the loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from harmonic.api.pod import Pod
from harmonic.feedback.moves import MoveAdvisor
from harmonic.feedback.relocate import MoveAsk
from harmonic.framework.config import Profile
from harmonic.plugins.dissonance import MODEL_SERVICE, DissonanceArgs
from harmonic.plugins.dissonance import Dissonance as DissonancePlugin
from harmonic.signals.classes import CLASSES
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.feedback.learning import InterferenceLearner, LearningConfig
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.feedback.prometheus import FlourishSource
from harmonic.signals.identity import WorkloadKey
from harmonic.sim.feedback_moves import SimMoves
from harmonic.sim.metrics import EXTRA_METRICS
from harmonic.sim.scenario import FeedbackSpec
from harmonic.sim.truth.config import TRUTH_CLASSES
from harmonic.sim.truth.interference import workload_matches

if TYPE_CHECKING:
    from harmonic.sim.engine import World
    from harmonic.sim.rightsizing import SimRightSizing

APPS_URL = "http://prometheus.apps.simulated"
_BEST_EFFORT = TRUTH_CLASSES.index("best-effort")
N = len(CLASSES)
#: An entry of the matrix counts as informed once this many reports saw its aggressor class hold at
#: least ``_PRESENT`` of the node's CPU: below that no placement said anything about it.
_INFORMED_REPORTS = 30
_PRESENT = 0.02


class SimulatedApps(httpx.BaseTransport):
    """The simulated applications' flourish metric behind the Prometheus query API."""

    def __init__(self, world: World, spec: FeedbackSpec) -> None:
        self._world = world
        self._spec = spec
        gt = world.plan.ground_truth
        self._noise = spec.noise if spec.noise is not None else gt.measurement_noise
        self._base: dict[str, float] = {}
        for topo in world.plan.topologies:
            times = dict(topo.service_time_ms)
            for s in topo.services:
                self._base[topo.workload(s)] = times.get(s, gt.service_time_ms)
        self._queries = 0
        #: Fills each report's queueing factor and judges the SLO (``SimRightSizing.judge``), if any.
        self.judge: Callable[[list[str], np.ndarray, np.ndarray, np.ndarray], None] | None = None
        #: pod key -> (workload, true slowdown, undisturbed cost) at the last query: the judge's view.
        self.last_truth: dict[str, tuple[str, float, float]] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/api/v1/query":
            return _json(404, {"status": "error", "errorType": "not_found", "error": request.url.path})
        if request.url.params.get("query", "") != self._spec.query:
            return _json(
                400,
                {
                    "status": "error",
                    "errorType": "bad_data",
                    "error": f"unknown series; try {self._spec.query}",
                },
            )
        w = self._world
        now = w.clock.now()
        truth = w.truth
        _, up, alloc = truth._live_nodes()
        t = truth.table
        rows = np.flatnonzero(t.node[: t.used] >= 0)
        rows = rows[up[t.node[rows]]]
        slow = truth.interference.slowdown_arrays(
            t.node[rows], t.klass[rows], t.cpu[rows], t.mult[rows], alloc
        )
        key_of = {slot: key for key, slot in t.slot_of.items()}
        self._queries += 1
        rng = np.random.default_rng([w.plan.seed, self._queries, 7919])
        noise = np.maximum(1.0 + self._noise * rng.standard_normal(len(rows)), 0.05)
        keep = t.klass[rows] != _BEST_EFFORT
        keys = [key_of[r] for r in rows[keep].tolist()]
        slow, noise = slow[keep], noise[keep]
        workloads = [t.workload[r] for r in rows[keep].tolist()]
        base = np.array([self._base.get(wl, 1.0) for wl in workloads])
        # How near each pod's CPU use is to its request (right-sizing scenarios: sim.rightsizing).
        factor = np.ones(len(keys))
        if self.judge is not None:
            self.judge(keys, slow, base, factor)
        series: list[dict[str, object]] = []
        self.last_truth = {}
        for i, key in enumerate(keys):
            sd = float(slow[i])
            self.last_truth[key] = (workloads[i], sd, float(base[i]))
            ns, name = key.split("/", 1)
            series.append(
                {
                    "metric": {"namespace": ns, "pod": name},
                    "value": [now, repr(float(base[i] * (1.0 + sd) * factor[i] * noise[i]))],
                }
            )
        return _json(200, {"status": "success", "data": {"resultType": "vector", "result": series}})


def _json(status: int, body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(
        status, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


class _Fit:
    """Least-squares sufficient statistics of slowdown on neighbour shares, and presence counts."""

    def __init__(self) -> None:
        self.xtx = np.zeros((N, N))
        self.xty = np.zeros(N)
        self.present = np.zeros(N, dtype=np.int64)

    def add(self, x: np.ndarray, y: float) -> None:
        self.xtx += np.outer(x, x)
        self.xty += x * y
        self.present += x >= _PRESENT

    def informed(self) -> np.ndarray:
        return np.asarray(self.present >= _INFORMED_REPORTS)

    def solve(self) -> np.ndarray:
        """The truth's best linear fit (no intercept: an undisturbed pod has no slowdown) over the
        informed aggressors; NaN elsewhere."""
        keep = self.informed()
        out = np.full(N, np.nan)
        if keep.any():
            a = self.xtx[np.ix_(keep, keep)]
            out[keep] = np.linalg.lstsq(a, self.xty[keep], rcond=None)[0]
        return out


class Yardstick:
    """Judges the learned matrix against the truth over the placements the loop saw."""

    def __init__(self) -> None:
        self.by_class: dict[int, _Fit] = {}
        self.by_workload: dict[WorkloadKey, tuple[int, _Fit]] = {}
        self.reports = 0
        self.violations = 0

    def add(self, klass: int, workload: WorkloadKey, x: np.ndarray, slowdown: float, violated: bool) -> None:
        self.by_class.setdefault(klass, _Fit()).add(x, slowdown)
        self.by_workload.setdefault(workload, (klass, _Fit()))[1].add(x, slowdown)
        self.reports += 1
        self.violations += violated

    def truth_rows(self) -> dict[int, np.ndarray]:
        return {c: f.solve() for c, f in sorted(self.by_class.items())}

    def error(self, matrix: np.ndarray) -> float | None:
        """Relative Frobenius error of ``matrix`` against the truth over the informed entries."""
        diff = norm = 0.0
        for c, row in self.truth_rows().items():
            keep = ~np.isnan(row)
            diff += float(((matrix[c, keep] - row[keep]) ** 2).sum())
            norm += float((row[keep] ** 2).sum())
        return round((diff / norm) ** 0.5, 6) if norm > 0 else None

    def rank_correlation(self, matrix: np.ndarray) -> float | None:
        """Mean over victim classes (with at least 3 informed aggressors) of the Spearman correlation
        between the learned and the true ranking of aggressors."""
        values = []
        for c, row in self.truth_rows().items():
            keep = ~np.isnan(row)
            if keep.sum() >= 3:
                values.append(spearman(matrix[c, keep], row[keep]))
        return round(float(np.mean(values)), 6) if values else None

    def workload_errors(self, rows: dict[WorkloadKey, np.ndarray]) -> dict[WorkloadKey, float]:
        """Relative error of each workload's own row (``rows``: key -> row) over its informed entries."""
        errs = {}
        for key, (_, fit) in self.by_workload.items():
            truth = fit.solve()
            keep = ~np.isnan(truth)
            norm = float((truth[keep] ** 2).sum())
            if key in rows and norm > 0:
                errs[key] = (float(((rows[key][keep] - truth[keep]) ** 2).sum()) / norm) ** 0.5
        return errs


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties; 0 when a side is constant)."""
    ra, rb = _ranks(a), _ranks(b)
    sa, sb = ra.std(), rb.std()
    if sa == 0 or sb == 0:
        return 0.0
    return float(((ra - ra.mean()) * (rb - rb.mean())).mean() / (sa * sb))


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for v in np.unique(x):
        tie = x == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def _prior(profile: Profile) -> DissonanceModel:
    args = profile.args.get(DissonancePlugin.NAME)
    if isinstance(args, DissonanceArgs):
        return DissonanceModel(overrides=args.matrix, importance=args.importance)
    return DissonanceModel()


class SimFeedback:
    """The loop of one world: read reports, store them with their placement, learn."""

    def __init__(self, world: World, spec: FeedbackSpec) -> None:
        self.world = world
        self.spec = spec
        profile = world.run_spec.profile
        uses = DissonancePlugin.NAME in profile.plugin_names
        self.learning = uses and (spec.learn is None or world.profile in spec.learn)
        self.learner = InterferenceLearner(
            _prior(profile),
            LearningConfig(
                spec.observation_noise, spec.prior_spread, spec.prior_floor, spec.sensitivity_spread
            ),
        )
        self.initial = self.learner.model.matrix.copy()
        self.apps = SimulatedApps(world, spec)
        self.source = FlourishSource(APPS_URL, transport=self.apps, name="sim/apps")
        self.yardstick = Yardstick()
        self.advisor = MoveAdvisor()
        self.rounds = 0
        self.no_signal = 0
        self.rightsizing: SimRightSizing | None = None
        self.moves = SimMoves(world, spec.moves)

    @property
    def model(self) -> DissonanceModel:
        return self.learner.model

    def start(self) -> None:
        if self.spec.rightsizing is not None:
            from harmonic.sim.rightsizing import SimRightSizing

            # Built here, not with the loop: the world's usage truth comes after the loop's services.
            self.rightsizing = SimRightSizing(self.world, self.spec.rightsizing)
            self.apps.judge = self.rightsizing.judge
        self.world.after(self.spec.interval, self.tick)

    def tick(self) -> None:
        w = self.world
        self.rounds += 1
        self.step(w.clock.now())
        end = w.plan.duration
        # A scenario with ``feedback`` has a duration (checked at load), so the ticks end with it.
        if end is not None and w.clock.now() + self.spec.interval <= end:
            w.after(self.spec.interval, self.tick)

    def step(self, now: float) -> None:
        reports = self.source.read(self.spec.query)
        if isinstance(reports, str):
            self.no_signal += 1
            return
        scheduler = self.world.scheduler
        view = PlacementView(scheduler.cache.snapshot, [q.pod for q in scheduler.queue.pending_pods()])
        observations = []
        for r in reports:
            key = f"{r.namespace}/{r.pod}"
            obs = view.observation(key, self.spec.query, r.value, "minimize", now)
            truth = self.apps.last_truth.get(key)
            if obs is None or truth is None or obs.neighbours is None:
                continue
            observations.append(obs)
            _, slowdown, _base = truth
            self.yardstick.add(
                obs.klass, obs.workload, obs.neighbours, slowdown, 1.0 + slowdown > self.spec.slo_factor
            )
        self.learner.observe(observations)
        self.learner.refresh()
        asks = [
            (a.workload, MoveAsk(a.pod, a.describe(), nodes=frozenset(a.worth)))
            for a in self.advisor.advise(view, self.learner, now, self._started)
        ]
        if self.rightsizing is not None:
            self.rightsizing.observe(view, observations, now)
            asks += [
                (str(wl), MoveAsk(key, f"move {key} off {node}: its resize is Infeasible there", want))
                for key, node, wl, want in self.rightsizing.take_infeasible()
            ]
        self.moves.ask(asks)

    def _started(self, pod: Pod) -> float | None:
        """When the simulated kubelet started the pod (its binding: the simulator starts pods at once)."""
        rec = self.world.records.get(pod.key)
        return rec.bound_at if rec is not None else None

    def decisions(self) -> list[tuple[str, str]]:
        """(workload, text) of every move asked for and resize decided, in time order."""
        out = list(self.moves.log)
        if self.rightsizing is not None:
            out += [(d.workload, d.explain()) for d in self.rightsizing.sizer.log]
        return sorted(out, key=lambda e: float(e[1].split(" ", 1)[0][2:]))

    def metrics(self) -> dict[str, Any]:
        y = self.yardstick
        final = self.learner.model.matrix
        rows = {}
        for key in y.by_workload:
            est = self.learner.workload_estimate(key)
            if est is not None:
                rows[key] = est.mean
        prior_rows = {key: self.initial[c] for key, (c, _) in y.by_workload.items()}
        before, after = y.workload_errors(prior_rows), y.workload_errors(rows)
        # The workloads whose own sensitivity the scenario's truth sets (``groundTruth.workloads``).
        singled = [o.workload for o in self.world.plan.ground_truth.workloads if o.sensitivity is not None]
        named = {
            str(k): {"initial": round(before[k], 6), "final": round(after[k], 6)}
            for k in sorted(after)
            if k in before and any(workload_matches(p, f"Any/{k}") for p in singled)
        }
        return {
            "learning": self.learning,
            "rounds": self.rounds,
            "no_signal_rounds": self.no_signal,
            "observations": self.learner.observations,
            "matrix_error_initial": y.error(self.initial),
            "matrix_error_final": y.error(final),
            "rank_correlation_initial": y.rank_correlation(self.initial),
            "rank_correlation_final": y.rank_correlation(final),
            "workload_error_initial": _mean(before),
            "workload_error_final": _mean(after),
            "workload_errors": named,
            # The workloads whose own row the Dissonance plugin reads (learning profiles only).
            "workload_rows": sorted(str(k) for k in self.learner.model.workload_rows)
            if self.learning
            else [],
            "resizes": self.rightsizing.counts["resizes"] if self.rightsizing is not None else None,
            "rightsizing": self.rightsizing.metrics() if self.rightsizing is not None else None,
            "moves": self.moves.metrics(),
            "move_recommendations": self.advisor.issued,
            "slo_violation_share": round(y.violations / y.reports, 6) if y.reports else None,
        }


def _mean(errors: dict[WorkloadKey, float]) -> float | None:
    return round(float(np.mean(list(errors.values()))), 6) if errors else None


def feedback_for(world: World) -> SimFeedback | None:
    spec = world.plan.feedback
    return SimFeedback(world, spec) if spec is not None else None


def install(world: World, services: dict[str, Any]) -> SimFeedback | None:
    """The world's loop (None without ``feedback:``); a learning profile's Dissonance reads its model."""
    loop = feedback_for(world)
    if loop is not None and loop.learning:
        services[MODEL_SERVICE] = loop.model
    return loop


def _metrics(world: World) -> dict[str, Any]:
    loop = getattr(world, "feedback", None)
    return {"feedback": loop.metrics()} if loop is not None else {}


EXTRA_METRICS.append(_metrics)
