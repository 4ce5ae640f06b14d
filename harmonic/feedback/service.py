"""The live feedback loop of ``harmonic run`` and ``harmonic extender``.

Every ``interval`` seconds, on its own thread: take the reports posted to ``/v1/feedback`` since the
last round (``FeedbackIntake``), run the flourish query of every workload whose pods carry
``harmonic.dev/flourish-query`` (``FlourishSource``; an unreachable Prometheus is "no signal" for the
round), then — on the scheduler's side, through ``on_state`` so the snapshot is read consistently —
store each report with its pod's placement (``PlacementView``; a workload's report goes to each of its
running pods) and hand them to the ``InterferenceLearner``, whose model is the ``dissonance`` handle
service the Dissonance plugin reads. Then, off the scheduler's thread again, the right-sizer's actions
are carried out, and the moves asked for — the advisor's and the ``Infeasible`` resizes' — are carried
out by ``moves`` (``harmonic run --feedback-moves``: ``moves_live``) or, without it, only reported.
``state()`` is the JSON ``harmonic model`` prints (served at ``/debug/model``); ``/metrics`` carries
``harmonic_feedback_*`` and the learned matrix.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from harmonic.feedback.moves import MoveAdvice, MoveAdvisor
from harmonic.feedback.moves_live import InfeasibleResizes, LiveMoves, advice_asks
from harmonic.feedback.report import model_state
from harmonic.feedback.rightsizing_live import LiveRightSizing
from harmonic.feedback.rightsizing_loop import Action
from harmonic.framework.config import SchedulerConfiguration
from harmonic.plugins.dissonance import Dissonance, DissonanceArgs
from harmonic.signals.classes import CLASSES
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.feedback.intake import FeedbackIntake, Posted
from harmonic.signals.feedback.learning import InterferenceLearner
from harmonic.signals.feedback.observation import Goal, Observation
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.feedback.prometheus import (
    FeedbackSpecError,
    FlourishSource,
    Report,
    spec_from_annotations,
)
from harmonic.signals.metrics import (
    FEEDBACK_EVIDENCE,
    FEEDBACK_LEARNED,
    FEEDBACK_LEARNED_SD,
    FEEDBACK_MOVES,
    FEEDBACK_OBSERVATIONS,
)
from harmonic.signals.periodic import Periodic
from harmonic.signals.usage import UsageReading

log = logging.getLogger(__name__)

#: Runs a function with a view of the scheduler's current placement, on the scheduler's side.
OnState = Callable[[Callable[[PlacementView], None]], None]


def prior_of(cfg: SchedulerConfiguration) -> DissonanceModel:
    """The prior: the first profile's Dissonance ``matrix``/``importance`` args, else the defaults."""
    for p in cfg.profiles:
        args = p.args.get(Dissonance.NAME)
        if isinstance(args, DissonanceArgs):
            return DissonanceModel(overrides=args.matrix, importance=args.importance)
    return DissonanceModel()


class FeedbackService:
    def __init__(
        self,
        learner: InterferenceLearner,
        on_state: OnState,
        intake: FeedbackIntake | None = None,
        source: FlourishSource | None = None,
        interval: float = 60.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        import time

        self.learner = learner
        self.intake = intake
        self.source = source
        self.interval = interval
        self._on_state = on_state
        self._clock = clock or time.time
        # Rounds wait a full interval first: the first reports need time to arrive.
        self._refresher = Periodic("feedback", self.round, interval, wait_first=True)
        self.rounds = 0
        self.no_signal = 0
        self.advisor = MoveAdvisor()
        self._advice: list[MoveAdvice] = []
        #: Right-sizing (``harmonic run --feedback-rightsizing``), or None.
        self.rightsizing: LiveRightSizing | None = None
        #: Moves carried out (``harmonic run --feedback-moves``), or None: only reported.
        self.moves: LiveMoves | None = None

    @property
    def model(self) -> DissonanceModel:
        return self.learner.model

    # ------------------------------------------------------------------ one round
    def round(self, timeout: float = 30.0) -> bool:
        """Collect reports, then learn from them with the placement in force; False when the scheduler
        did not answer within ``timeout`` (the round's reports are dropped, not queued up)."""
        posted = self.intake.drain() if self.intake is not None else []
        answers: dict[str, tuple[str, set[str], list[Report]]] = {}
        if self.source is not None:
            declared = self._call(_queries, timeout)
            if declared is None:
                return False
            # Queries run here, never on the scheduler's thread: Prometheus may be slow or down.
            for query, (goal, pods) in declared.items():
                reports = self.source.read(query)
                if isinstance(reports, str):
                    self.no_signal += 1
                else:
                    answers[query] = (goal, pods, reports)
        reading = self.rightsizing.read() if self.rightsizing is not None else None
        actions = self._call(lambda view: self._learn(view, posted, answers, reading), timeout)
        self.rounds += 1
        if actions is None:
            return False
        if self.rightsizing is not None:
            self.rightsizing.carry_out(actions, self._clock())
        self._move(self._asked())
        return True

    def _asked(self) -> list[tuple[str, Any]]:
        """The round's asks: the advisor's, then the ``Infeasible`` resizes'."""
        asks = advice_asks(self._advice)
        self._advice = []
        actuator = self.rightsizing.actuator if self.rightsizing is not None else None
        if isinstance(actuator, InfeasibleResizes):
            asks += actuator.take()
        return asks

    def _move(self, asks: list[tuple[str, Any]]) -> None:
        if self.moves is not None:
            self.moves.round(asks)
        elif asks:
            # Reported as they are today: the advisor's log and the right-sizer's say "recommended".
            FEEDBACK_MOVES.labels("recommended").inc(len(asks))

    def _call(self, fn: Callable[[PlacementView], Any], timeout: float) -> Any:
        box: list[Any] = []
        ready = threading.Event()

        def run(view: PlacementView) -> None:
            try:
                box.append(fn(view))
            finally:
                ready.set()

        self._on_state(run)
        if not ready.wait(timeout) or not box:
            log.warning("feedback: the scheduler did not answer within %gs; round skipped", timeout)
            return None
        return box[0]

    def _learn(
        self,
        view: PlacementView,
        posted: list[Posted],
        answers: dict[str, tuple[str, set[str], list[Report]]],
        reading: UsageReading | None = None,
    ) -> list[Action]:
        now = self._clock()
        observations: list[Observation] = []
        for p in posted:
            observations += _observe(view, p.namespace, p.pod, p.workload, p.metric, p.value, p.goal, now)
        for query, (goal, pods, reports) in answers.items():
            observations += _from_reports(view, reports, query, goal, pods, now)
        used = self.learner.observe(observations)
        FEEDBACK_OBSERVATIONS.inc(used)
        self.learner.refresh()
        self._advice = self.advisor.advise(view, self.learner, now)
        self._export()
        if self.rightsizing is None:
            return []
        return self.rightsizing.loop.observe(view, observations, reading.pods if reading else {}, now)

    def _export(self) -> None:
        for i, victim in enumerate(CLASSES):
            est = self.learner.class_estimate(i)
            for j, aggressor in enumerate(CLASSES):
                FEEDBACK_LEARNED.labels(str(victim), str(aggressor)).set(float(est.mean[j]))
                FEEDBACK_LEARNED_SD.labels(str(victim), str(aggressor)).set(float(est.sd[j]))
                FEEDBACK_EVIDENCE.labels(str(victim), str(aggressor)).set(
                    float(self.learner.model.evidence[i, j])
                )

    def state(self) -> dict[str, Any]:
        extra = self.rightsizing.decisions() if self.rightsizing is not None else []
        if self.moves is None:
            return model_state(self.learner, self.advisor, extra)
        # The moves' own log has every ask with its outcome: the advisor's "recommended" would be wrong.
        return model_state(self.learner, None, extra + self.moves.decisions())

    # ------------------------------------------------------------------ thread
    def start(self) -> None:
        self._refresher.start()

    def stop(self) -> None:
        self._refresher.stop(timeout=10)


def _queries(view: PlacementView) -> dict[str, tuple[str, set[str]]]:
    """query -> (goal, keys of the running pods that declare it); bad annotations are logged once per
    round and skipped."""
    out: dict[str, tuple[str, set[str]]] = {}
    for pod in view.pods():
        try:
            spec = spec_from_annotations(f"pod {pod.key}", pod.annotations)
        except FeedbackSpecError as e:
            log.warning("%s", e)
            continue
        if spec is not None:
            out.setdefault(spec.query, (spec.goal, set()))[1].add(pod.key)
    return out


def _from_reports(
    view: PlacementView, reports: list[Report], query: str, goal: str, pods: set[str], now: float
) -> list[Observation]:
    out: list[Observation] = []
    for r in reports:
        # A query answers for the pods that declared it, not for whatever else its series name.
        if r.pod and f"{r.namespace}/{r.pod}" not in pods:
            continue
        out += _observe(view, r.namespace, r.pod, r.workload, query, r.value, goal, now)
    return out


def _observe(
    view: PlacementView, ns: str, pod: str, workload: str, metric: str, value: float, goal: str, now: float
) -> list[Observation]:
    g: Goal = "maximize" if goal == "maximize" else "minimize"
    if pod:
        obs = view.observation(f"{ns}/{pod}", metric, value, g, now)
        return [obs] if obs is not None else []
    keys = [
        p.key for w, ps in view.by_workload().items() if w.namespace == ns and w.name == workload for p in ps
    ]
    return [o for k in keys if (o := view.observation(k, metric, value, g, now)) is not None]
