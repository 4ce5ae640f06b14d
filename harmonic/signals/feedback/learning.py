"""Online Bayesian learning of the dissonance matrix from applications' own reports.

Model. A pod of workload *w* (victim class *c*) reports a cost ``y`` (its flourish value, inverted for
``maximize`` goals). With ``x_k`` the share of its node's CPU held by class-``k`` neighbours,

    y = a_w * (1 + sum_k m_wk * x_k) + noise

which is the Dissonance model's own form (slowdown additive over classes, proportional to their CPU
share) with ``a_w`` the workload's undisturbed cost. Written as ``y / s_w = t_0 + sum_k t_k x_k`` (``s_w``
the first reports' mean, a unit only) it is linear in ``t``; each workload keeps the sufficient
statistics of a Bayesian linear regression with a Gaussian prior: ``t_0 ~ N(1, 0.5^2)``, and the
slopes ``t_k = f_w * prior[c][k] + d_k`` — the class's row scaled by the workload's own sensitivity
``f_w ~ N(1, sensitivitySpread^2)``, plus an entry's own departure ``d_k ~ N(0, tau_k^2)`` with
``tau_k = priorSpread * prior[c][k] + priorFloor`` — with noise of relative standard deviation
``observationNoise``. Integrating ``f_w`` out leaves a Gaussian prior whose entries move together: a
workload seen suffering three times its class's slowdown from one aggressor is expected to suffer more
from the others too, before it has met them (sensitivity as one factor per application, as Bubble-Up
measures it and Paragon infers it from sparse observations). ``sensitivitySpread`` is 0 by default,
which makes the entries independent: where one workload makes up its class, an aggressor class the
prior underrates reads as that workload's sensitivity (docs/feedback.md). A handful of reports move
the estimate little; many consistent ones move it all the way. The workload's slowdown from class *k* is
``m_wk = t_k / t_0`` (uncertainty by the delta method).

Per class: the reports of every workload of class *c*, each divided by its workload's estimated
``a_w``, give ``y / a_w - 1 = sum_k M_ck x_k + noise``, a second Bayesian regression with the prior row
as its mean. Its posterior mean is the learned row that ``DissonanceModel`` (the ``dissonance`` handle
service the Dissonance plugin reads) takes, its standard deviation the confidence ``harmonic model``
prints. Entries no report informs stay at the prior exactly.

An entry whose posterior standard deviation has narrowed to ``EVIDENCE_SD_RATIO`` of its prior's is
marked in ``DissonanceModel.evidence``: Dissonance's filter can be told to refuse on such entries only.

Per workload, published: a workload with at least ``MIN_OWN_REPORTS`` reports whose own row departs
from its class's learnt row by more than ``OWN_ROW_SIGMAS`` of its own standard deviation on some entry
gets that row in ``DissonanceModel.workload_rows``, which the plugin reads for what the workload
suffers. The others follow their class: a row no more certain than its class's would only add noise.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from harmonic.signals.classes import CLASSES
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.feedback.observation import Observation
from harmonic.signals.identity import WorkloadKey

N = len(CLASSES)
_INTERCEPT_SD = 0.5
#: Entries are slowdowns: kept within what ``DissonanceModel.set`` accepts.
_MAX_SLOWDOWN = 100.0
#: Reports kept per workload for explanations (``harmonic model --explain``).
RECENT = 20
#: A workload's own row is published once it has this many reports and departs from its class's row by
#: this many of its standard deviations on some entry.
MIN_OWN_REPORTS = 30
OWN_ROW_SIGMAS = 2.0
#: A class entry counts as evidence (``DissonanceModel.evidence``) once its posterior standard deviation
#: is at most this fraction of its prior's: the reports carry three times the prior's information.
EVIDENCE_SD_RATIO = 0.5


@dataclass(frozen=True)
class LearningConfig:
    #: Relative standard deviation of one report around the model (noise plus what the model misses).
    #: Lower values learn faster where placements vary, and go wrong where one aggressor is always
    #: beside a workload (docs/feedback.md, "The learner's noise").
    observation_noise: float = 0.5
    #: Prior standard deviation of an entry: this fraction of the prior value, plus ``prior_floor``.
    prior_spread: float = 0.5
    prior_floor: float = 0.1
    #: Prior standard deviation of a workload's sensitivity, relative to its class's (the factor its
    #: whole prior row is scaled by); 0, the default, makes the entries independent (docs/feedback.md
    #: has what 0.5 gains and where it misleads).
    sensitivity_spread: float = 0.0

    def __post_init__(self) -> None:
        if self.observation_noise <= 0:
            raise ValueError("observationNoise must be > 0")
        if self.prior_spread < 0 or self.prior_floor <= 0:
            raise ValueError("priorSpread must be >= 0 and priorFloor > 0")
        if self.sensitivity_spread < 0:
            raise ValueError("sensitivitySpread must be >= 0")


@dataclass
class _Stats:
    """Sufficient statistics of one regression on features [1, x_1..x_N]."""

    xtx: np.ndarray = field(default_factory=lambda: np.zeros((N + 1, N + 1)))
    xty: np.ndarray = field(default_factory=lambda: np.zeros(N + 1))
    n: int = 0


@dataclass
class WorkloadModel:
    key: WorkloadKey
    klass: int
    scale: float
    stats: _Stats = field(default_factory=_Stats)


@dataclass(frozen=True)
class Estimate:
    """Posterior of a row: mean and standard deviation of each aggressor's slowdown, and reports used."""

    mean: np.ndarray
    sd: np.ndarray
    observations: int


class InterferenceLearner:
    """Learns per-workload and per-class slowdown rows; publishes class rows into ``model``."""

    def __init__(self, prior: DissonanceModel, config: LearningConfig | None = None) -> None:
        self.config = config or LearningConfig()
        self.prior = prior.matrix.copy()
        #: The learned model, a ``DissonanceModel`` the scheduler reads; starts as a copy of the prior.
        self.model = DissonanceModel()
        self.model.matrix[:] = self.prior
        self.model.importance[:] = prior.importance
        self.model.version += 1
        self.workloads: dict[WorkloadKey, WorkloadModel] = {}
        self.observations = 0
        self.rejected = 0
        #: The latest reports of each workload, with their placement.
        self.recent: dict[WorkloadKey, deque[Observation]] = {}
        self._prior_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ intake
    def observe(self, observations: Iterable[Observation]) -> int:
        """Add reports (those without neighbour shares or with an unusable cost are counted as
        rejected); returns how many were learnt from."""
        used = 0
        for o in observations:
            cost = o.cost
            if o.neighbours is None or not np.isfinite(cost) or cost <= 0:
                self.rejected += 1
                continue
            wm = self.workloads.get(o.workload)
            if wm is None:
                wm = self.workloads[o.workload] = WorkloadModel(o.workload, o.klass, cost)
            phi = np.empty(N + 1)
            phi[0] = 1.0
            phi[1:] = o.neighbours
            z = cost / wm.scale
            wm.stats.xtx += np.outer(phi, phi)
            wm.stats.xty += phi * z
            wm.stats.n += 1
            self.recent.setdefault(o.workload, deque(maxlen=RECENT)).append(o)
            used += 1
        self.observations += used
        return used

    # ------------------------------------------------------------------ posteriors
    def _prior_sd(self, row: np.ndarray) -> np.ndarray:
        return np.asarray(self.config.prior_spread * row + self.config.prior_floor)

    def _workload_prior(self, klass: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean and inverse covariance of a class-``klass`` workload's prior on [t_0, t_1..t_N]."""
        hit = self._prior_cache.get(klass)
        if hit is None:
            row = self.prior[klass]
            cov0 = np.diag(np.concatenate([[_INTERCEPT_SD], self._prior_sd(row)]) ** 2)
            cov0[1:, 1:] += self.config.sensitivity_spread**2 * np.outer(row, row)
            hit = self._prior_cache[klass] = (np.concatenate([[1.0], row]), np.linalg.inv(cov0))
        return hit

    def _workload_posterior(self, wm: WorkloadModel) -> tuple[np.ndarray, np.ndarray]:
        mu0, precision0 = self._workload_prior(wm.klass)
        noise2 = self.config.observation_noise**2
        precision = precision0 + wm.stats.xtx / noise2
        cov = np.linalg.inv(precision)
        mean = cov @ (precision0 @ mu0 + wm.stats.xty / noise2)
        return mean, cov

    def workload_estimate(self, key: WorkloadKey) -> Estimate | None:
        """The workload's own slowdown row (``m_wk``), or None before its first report."""
        wm = self.workloads.get(key)
        if wm is None:
            return None
        mean, cov = self._workload_posterior(wm)
        t0 = max(float(mean[0]), 1e-6)
        m = mean[1:] / t0
        # Delta method for t_k / t_0.
        var = (np.diag(cov)[1:] + m**2 * cov[0, 0] - 2 * m * cov[0, 1:]) / t0**2
        return Estimate(np.clip(m, 0.0, _MAX_SLOWDOWN), np.sqrt(np.maximum(var, 0.0)), wm.stats.n)

    def baseline(self, key: WorkloadKey) -> float | None:
        """The workload's estimated undisturbed cost ``a_w`` in its metric's units."""
        wm = self.workloads.get(key)
        if wm is None:
            return None
        mean, _ = self._workload_posterior(wm)
        return float(mean[0]) * wm.scale

    def class_estimate(self, klass: int) -> Estimate:
        """The class row pooled over its workloads' reports (the prior when none reported)."""
        row = self.prior[klass]
        sd0 = self._prior_sd(row)
        noise2 = self.config.observation_noise**2
        xtx = np.zeros((N, N))
        xtr = np.zeros(N)
        n = 0
        for wm in list(self.workloads.values()):  # a copy: readers may run beside the loop
            if wm.klass != klass or wm.stats.n == 0:
                continue
            mean, _ = self._workload_posterior(wm)
            a = max(float(mean[0]), 1e-6)
            s = wm.stats
            # Residual r = z / a - 1 regressed on x, from the workload's sums: X'r = (S_xz - a S_x) / a.
            xtx += s.xtx[1:, 1:]
            xtr += (s.xty[1:] - a * s.xtx[0, 1:]) / a
            n += s.n
        precision = np.diag(1.0 / sd0**2) + xtx / noise2
        cov = np.linalg.inv(precision)
        mean = cov @ (row / sd0**2 + xtr / noise2)
        return Estimate(np.clip(mean, 0.0, _MAX_SLOWDOWN), np.sqrt(np.diag(cov)), n)

    def refresh(self) -> DissonanceModel:
        """Write every reported class's posterior mean row into ``model`` (one version bump)."""
        classes = sorted({wm.klass for wm in self.workloads.values() if wm.stats.n})
        evidence = np.zeros_like(self.model.evidence)
        for c in classes:
            row = self.class_estimate(c)
            self.model.matrix[c] = row.mean
            evidence[c] = row.sd <= EVIDENCE_SD_RATIO * self._prior_sd(self.prior[c])
        self.model.evidence = evidence
        own: dict[WorkloadKey, np.ndarray] = {}
        for key, wm in list(self.workloads.items()):
            if wm.stats.n < MIN_OWN_REPORTS:
                continue
            est = self.workload_estimate(key)
            assert est is not None
            if (np.abs(est.mean - self.model.matrix[wm.klass]) > OWN_ROW_SIGMAS * est.sd).any():
                own[key] = est.mean
        # Replaced whole, never edited in place: the scheduler may be reading the old dict.
        self.model.workload_rows = own
        if classes:
            self.model.version += 1
        return self.model
