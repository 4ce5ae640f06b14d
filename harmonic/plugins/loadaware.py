"""LoadAware — PreScore, Score, and optionally Filter.

Schedules by what pods will use, not what they ask for. The usage model (handle service
``node_usage``, ``harmonic.signals.usage``) forecasts, per workload, what one of its pods uses over the
coming steps (seasonal Holt-Winters: a mean per step and the spread of its errors). A node's forecast is
the sum over the pods it holds — the scheduler's own view, assumed pods included, so a pod placed a
moment ago counts before any metric shows it — of their workloads' forecasts; pods of workloads the
model does not know count at ``requestFraction`` x their requests. With the incoming pod added, the
node's forecast peak over the pod's horizon is

    peak = max over the horizon of (node mean + pod mean) + peakStddevs * sqrt(node var + pod var)

for CPU and for memory. Score ``100 * (1 - peak / allocatable)`` (0..100, the lower of CPU and memory):
the node with the most forecast headroom at its worst moment wins. NormalizeScore does nothing. With
``filterThreshold`` set, Filter rejects nodes whose forecast peak share of CPU or memory would exceed
it (Unschedulable: the forecast can change).

The pod's horizon is its annotation ``harmonic.dev/expected-duration`` (seconds or a duration such as
``20m``), else ``horizonSeconds``, capped at the model's forecast length. **Fallback:** when the model has
no reading, or its last one is older than ``staleSeconds`` (or a reading failed), the plugin scores as
requests say (``100 * (1 - requested / allocatable)`` with the pod added, the lower of CPU and memory),
never filters, and counts the cycle in ``harmonic_usage_fallback_total{plugin="LoadAware"}``.

Args (LoadAwareArgs): ``peakStddevs`` (k, default 2), ``horizonSeconds`` (3600), ``seasonSeconds``
(86400: the period the model looks for), ``staleSeconds`` (300), ``requestFraction`` (1.0),
``filterThreshold`` (0..1, default unset = no filter), ``forecastBackend`` (``numpy``; ``statsmodels``
with the ``forecast`` extra), ``metricProvider`` (where ``harmonic run`` reads usage: Prometheus or
KubernetesMetricsServer, as for Trimaran).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.framework.args import PluginArgs
from harmonic.framework.config import parse_duration
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Resource
from harmonic.framework.interface import MAX_NODE_SCORE, FilterPlugin, PreScorePlugin, ScorePlugin
from harmonic.framework.services import Need
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL, Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.trimaran.common import USAGE_NEEDS, MetricProviderSpec, UsageReader
from harmonic.signals.identity import WorkloadKey, workload_of
from harmonic.signals.usage import USAGE_FALLBACKS, UsageView

EXPECTED_DURATION_ANNOTATION = "harmonic.dev/expected-duration"
ERR_REASON_FORECAST = "node(s) forecast to exceed the load threshold"
_PRESCORE_KEY = "PreScoreLoadAware"
#: Per-pod caches in ``pod.extra``: the flat forecast (request fraction, vector) and the horizon in steps.
_FLAT_KEY = "LoadAware/flat"
_STEPS_KEY = "LoadAware/steps"
_COLUMNS = [CPU_COL, MEMORY_COL]
#: Forecast columns whose per-slot peaks are kept at once (each ``capacity x 2`` floats).
_PAIR_COLUMNS = 64
#: Slot changes kept for columns not read since (trimmed to what the least recent reader still needs).
_CHANGES_KEPT = 4096


class LoadAwareArgs(PluginArgs):
    peak_stddevs: float = Field(default=2.0, ge=0, le=10)
    horizon_seconds: float = Field(default=3600.0, gt=0)
    season_seconds: float = Field(default=86400.0, gt=0)
    stale_seconds: float = Field(default=300.0, gt=0)
    request_fraction: float = Field(default=1.0, ge=0, le=10)
    filter_threshold: float | None = Field(default=None, gt=0, le=1)
    #: ``numpy`` (built in) or ``statsmodels`` (the ``forecast`` extra) Holt-Winters.
    forecast_backend: Literal["numpy", "statsmodels"] = "numpy"
    metric_provider: MetricProviderSpec = Field(default_factory=MetricProviderSpec)


class _NodeForecasts:
    """Each slot's forecast — mean per resource (CPU, memory) and step, and variance per resource — as
    the sum over the pods it holds, kept current by snapshot events (``O(horizon)`` per event). A new
    view rebuilds it from the snapshot: once per refresh, never per cycle."""

    def __init__(self, snap: Snapshot, request_fraction: float, peak_stddevs: float) -> None:
        self.frac = request_fraction
        self.k = peak_stddevs
        self.view: UsageView | None = None
        self.columns: dict[WorkloadKey, int] = {}
        self.horizon = 1
        self.pod_mean = np.zeros((0, 2, 1))
        self.pod_var = np.zeros((0, 2))
        self.mean = np.zeros((snap.capacity, 2, 1))
        self.var = np.zeros((snap.capacity, 2))
        #: Running maximum of ``mean`` over the steps plus ``k`` standard deviations, for pods whose own
        #: forecast is flat: their peak over ``s`` steps is one gather of column ``s - 1`` plus their own.
        self.prefix_max = np.zeros((snap.capacity, 2, 1))
        #: Its last step, contiguous: what a pod forecast over the whole horizon (the usual case) reads.
        self.full_peak = np.zeros((snap.capacity, 2))
        self.dirty: set[int] = set()
        #: Per forecast column asked for lately: each slot's peak over the whole horizon of its mean plus
        #: that workload's (``max over steps of (node + pod)``), so a cycle over the full horizon is one
        #: gather. A column's rows of slots that changed since it was last read (``changes`` from
        #: ``seen[index]`` on) are recomputed when it is read, that column only.
        self.pair: dict[int, int] = {}  # forecast column -> index in pair_table
        self.pair_table = np.zeros((0, snap.capacity, 2))
        self.changes: list[int] = []
        self.seen: dict[int, int] = {}
        snap.listeners.append(self)

    def follow(self, view: UsageView, snap: Snapshot) -> None:
        if view is self.view and len(self.mean) >= snap.capacity:
            return
        self.view = view
        self.columns = {key: i for i, key in enumerate(view.workloads)}
        h = self.horizon = max((len(f.cpu.mean) for f in view.workloads.values()), default=1)
        self.pod_mean = np.zeros((len(self.columns), 2, h))
        self.pod_var = np.zeros((len(self.columns), 2))
        for key, col in self.columns.items():
            f = view.workloads[key]
            self.pod_mean[col, 0, : len(f.cpu.mean)] = f.cpu.mean
            self.pod_mean[col, 1, : len(f.memory.mean)] = f.memory.mean
            self.pod_var[col] = (f.cpu.std**2, f.memory.std**2)
        self.mean = np.zeros((snap.capacity, 2, h))
        self.var = np.zeros((snap.capacity, 2))
        # Sized before the pods are added (flat ones shift these in place), recomputed after.
        self.prefix_max = np.zeros((snap.capacity, 2, h))
        self.full_peak = np.zeros((snap.capacity, 2))
        self.pair.clear()
        self.pair_table = np.zeros((_PAIR_COLUMNS, snap.capacity, 2))
        self.changes.clear()
        self.seen.clear()
        for slot, pod in snap.all_pods():
            self._change(slot, pod, 1)
        self.prefix_max = self._flat_rows(slice(None))
        self.full_peak = np.ascontiguousarray(self.prefix_max[:, :, -1])
        self.dirty.clear()

    def pair_peaks(self, col: int, slots: np.ndarray) -> np.ndarray:
        """Per candidate and resource, the highest of (node mean + the column's pod mean) over the
        whole horizon, plus ``k`` standard deviations of (node variance + the column's)."""
        j = self.pair.get(col)
        if j is None:
            if len(self.pair) >= _PAIR_COLUMNS:
                # Many workloads in turn: bounded memory beats keeping every column.
                self.pair.clear()
                self.seen.clear()
            j = self.pair[col] = len(self.pair)
            self.pair_table[j] = self._pair_rows(col, slice(None))
        else:
            start = self.seen[j]
            if start < 0:
                self.pair_table[j] = self._pair_rows(col, slice(None))
            elif start == len(self.changes) - 1:  # the usual case: one pod bound since the last read
                row = self.changes[start]
                self.pair_table[j, row] = self._pair_rows(col, row)
            elif start < len(self.changes):
                rows = np.unique(np.asarray(self.changes[start:], dtype=np.int64))
                self.pair_table[j, rows] = self._pair_rows(col, rows)
        self.seen[j] = len(self.changes)
        if len(self.changes) > _CHANGES_KEPT:
            # A column too far behind is recomputed whole when next read (-1); the changes every other
            # column has read are forgotten.
            behind = len(self.changes) - _CHANGES_KEPT
            for k, v in self.seen.items():
                if 0 <= v < behind:
                    self.seen[k] = -1
            read = min((v for v in self.seen.values() if v >= 0), default=len(self.changes))
            del self.changes[:read]
            self.seen = {k: (v - read if v >= 0 else -1) for k, v in self.seen.items()}
        peaks: np.ndarray = self.pair_table[j].take(slots, axis=0)
        return peaks

    def _pair_rows(self, col: int, rows: np.ndarray | slice | int) -> np.ndarray:
        """Peak per resource of the rows' mean plus the column's over the whole horizon, plus ``k``
        standard deviations of their summed variance."""
        peak: np.ndarray = (self.mean[rows] + self.pod_mean[col]).max(axis=-1)
        peak += self.k * np.sqrt(self.var[rows] + self.pod_var[col])
        return peak

    def _flat_rows(self, rows: np.ndarray | slice) -> np.ndarray:
        out: np.ndarray = np.maximum.accumulate(self.mean[rows], axis=2)
        out += self.k * np.sqrt(np.maximum(self.var[rows], 0.0))[:, :, None]
        return out

    def flat_peaks(self, slots: np.ndarray, steps: int) -> np.ndarray:
        """Per candidate and resource, the highest mean over the first ``steps`` steps plus ``k`` standard
        deviations of the node's forecast."""
        if self.dirty:
            rows = np.fromiter(self.dirty, dtype=np.int64, count=len(self.dirty))
            fresh = self.prefix_max[rows] = self._flat_rows(rows)
            self.full_peak[rows] = fresh[:, :, -1]
            self.dirty.clear()
        table = self.full_peak if steps == self.horizon else self.prefix_max[:, :, steps - 1]
        peaks: np.ndarray = table[slots]
        return peaks

    def flat(self, pod: Pod) -> np.ndarray:
        cached = pod.extra.get(_FLAT_KEY)
        if cached is None or cached[0] != self.frac:
            vec = np.array([pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)], dtype=np.float64)
            cached = pod.extra[_FLAT_KEY] = (self.frac, vec * self.frac)
        flat: np.ndarray = cached[1]
        return flat

    def _change(self, slot: int, pod: Pod, sign: int) -> None:
        if self.view is None or slot >= len(self.mean):
            return  # not following yet, or the snapshot grew: the next follow() rebuilds
        col = self.columns.get(workload_of(pod))
        if col is None:
            # A flat forecast shifts every step by the same amount, and so every running maximum and
            # every pair peak: no recomputation.
            flat = sign * self.flat(pod)
            self.mean[slot] += flat[:, None]
            self.prefix_max[slot] += flat[:, None]
            self.full_peak[slot] += flat
            if self.pair:
                self.pair_table[: len(self.pair), slot] += flat
            return
        self.mean[slot] += sign * self.pod_mean[col]
        self.var[slot] += sign * self.pod_var[col]
        self.dirty.add(slot)
        self.changes.append(slot)

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._change(slot, pod, 1)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._change(slot, pod, -1)

    def node_changed(self, snap: Snapshot, slot: int, old: Any, new: Any) -> None:
        if new is None and slot < len(self.mean):
            self.mean[slot] = 0
            self.var[slot] = 0
            self.dirty.add(slot)
            self.changes.append(slot)


class LoadAware(PreScorePlugin, ScorePlugin, FilterPlugin):
    NAME: ClassVar[str] = "LoadAware"
    Args: ClassVar[type[PluginArgs]] = LoadAwareArgs
    NEEDS: ClassVar[tuple[Need, ...]] = USAGE_NEEDS

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cfg: LoadAwareArgs = args
        self._nodes: _NodeForecasts | None = None
        self.reader = UsageReader(handle)
        self._inverse: tuple[tuple[int, int], np.ndarray] | None = None

    def events_to_register(self) -> tuple[EventWithHint, ...]:
        # A node the forecast filtered may fit once pods leave it, a node comes, or the forecast changes.
        return (
            EventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE)),
            EventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE)),
            EventWithHint(ClusterEvent(Resource.MODEL, Action.ALL)),
        )

    def _horizon_steps(self, pod: Pod, view: UsageView) -> int:
        cached = pod.extra.get(_STEPS_KEY)
        if cached is not None and cached[0] == (view.step_seconds, self.cfg.horizon_seconds):
            steps: int = cached[1]
            return steps
        seconds = self.cfg.horizon_seconds
        text = pod.annotations.get(EXPECTED_DURATION_ANNOTATION)
        if text:
            # A bad annotation keeps the default horizon: it never fails the cycle.
            with contextlib.suppress(ValueError):
                seconds = float(text) if text.replace(".", "", 1).isdigit() else parse_duration(text)
        steps = max(1, math.ceil(seconds / max(view.step_seconds, 1e-9)))
        pod.extra[_STEPS_KEY] = ((view.step_seconds, self.cfg.horizon_seconds), steps)
        return steps

    def _shares(self, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray | None:
        """Forecast peak share of allocatable CPU and memory per candidate (n x 2), or None to fall back."""
        view = self.reader.view()
        if not view.fresh_at(self.handle.clock.now(), self.cfg.stale_seconds) or not view.workloads:
            USAGE_FALLBACKS.labels(self.NAME, view.reason or "stale or no forecast").inc()
            return None
        if self._nodes is None:
            self._nodes = _NodeForecasts(
                self.handle.snapshot, self.cfg.request_fraction, self.cfg.peak_stddevs
            )
        nodes = self._nodes
        nodes.follow(view, snap)
        steps = min(self._horizon_steps(pod, view), nodes.horizon)
        col = nodes.columns.get(workload_of(pod))
        if col is not None:
            if steps == nodes.horizon:
                peak = nodes.pair_peaks(col, slots)
            else:
                mean = nodes.mean[:, :, :steps][slots]
                mean += nodes.pod_mean[col, :, :steps]
                peak = mean.max(axis=2)
                peak += self.cfg.peak_stddevs * np.sqrt(nodes.var[slots] + nodes.pod_var[col])
        else:  # a flat forecast: the node's own highest step (and spread) plus the pod's
            peak = nodes.flat_peaks(slots, steps)
            peak += nodes.flat(pod)
        peak *= self._inverse_allocatable(snap)[slots]
        return peak

    def _inverse_allocatable(self, snap: Snapshot) -> np.ndarray:
        """1 / allocatable CPU and memory per slot (a share past any threshold where nothing is allocatable),
        recomputed when nodes change."""
        key = (snap.node_generation, snap.capacity)
        if self._inverse is None or self._inverse[0] != key:
            alloc = snap.allocatable[:, _COLUMNS].astype(np.float64)
            inv = np.divide(1.0, alloc, out=np.full(alloc.shape, 1e12), where=alloc > 0)
            self._inverse = (key, inv)
        return self._inverse[1]

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        shares = self._shares(pod, snap, slots)
        if shares is None:
            alloc = snap.allocatable[slots][:, _COLUMNS].astype(np.float64)
            used = (snap.requested[slots][:, _COLUMNS] + snap.pod_vector(pod)[_COLUMNS]).astype(np.float64)
            shares = np.divide(used, alloc, out=np.full(used.shape, np.inf), where=alloc > 0)
        worst = np.maximum(shares[:, 0], shares[:, 1])  # a reduction over an axis of two is far slower
        # round(100 * (1 - worst)), half up, clipped to 0..100, in place.
        worst *= -MAX_NODE_SCORE
        worst += MAX_NODE_SCORE + 0.5
        np.floor(worst, out=worst)
        np.clip(worst, 0, MAX_NODE_SCORE, out=worst)
        state.write(_PRESCORE_KEY, worst.astype(np.int64))
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        try:
            scores: np.ndarray = state.read(_PRESCORE_KEY)
        except KeyError:  # enabled at Score without PreScore
            self.pre_score(state, pod, snap, slots)
            scores = state.read(_PRESCORE_KEY)
        return scores

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        threshold = self.cfg.filter_threshold
        if threshold is None:
            return None
        shares = self._shares(pod, snap, slots)
        if shares is None:
            return None
        bad: np.ndarray = (shares[:, 0] > threshold) | (shares[:, 1] > threshold)
        if not bad.any():
            return None
        return Verdicts.failing(bad, Code.UNSCHEDULABLE, ERR_REASON_FORECAST)
