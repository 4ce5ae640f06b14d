"""Batch progress under the truth's interference: a finite-work pod advances at 1 / (1 + slowdown), its
slowdown being the truth's over the pods sharing its node, and no work is lost or invented when the
slowdown changes mid-run."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.sim.truth.config import DEFAULT_PRESSURE, DEFAULT_SENSITIVITY, TRUTH_CLASSES, GroundTruth
from harmonic.sim.truth.interference import Interference, PodTruth
from harmonic.sim.truth.progress import BatchProgress

ALLOC = 8000.0  # millicores of the one node
CONVEXITY = 1.0


class Host:
    """A clock and a timer heap, as the engine has."""

    def __init__(self) -> None:
        self.t = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = itertools.count()
        self.cancelled: set[int] = set()

    def now(self) -> float:
        return self.t

    def after(self, delay: float, fn: Callable[[], None]) -> int:
        seq = next(self.seq)
        heapq.heappush(self.timers, (self.t + delay, seq, fn))
        return seq

    def cancel(self, handle: int) -> None:
        self.cancelled.add(handle)

    def advance(self, to: float) -> None:
        """Run every timer due up to ``to``, then set the clock there."""
        while self.timers and self.timers[0][0] <= to:
            when, seq, fn = heapq.heappop(self.timers)
            if seq not in self.cancelled:
                self.t = when
                fn()
        self.t = to


def world() -> tuple[Host, BatchProgress, dict[str, float]]:
    host = Host()
    finished: dict[str, float] = {}
    inter = Interference(GroundTruth(workload_sensitivity_spread=0.0, convexity=CONVEXITY), seed=1)
    return host, BatchProgress(host, inter, lambda key: finished.__setitem__(key, host.now())), finished


def pod(cls: str, cpu: float) -> PodTruth:
    return PodTruth(f"Job/default/{cls}", TRUTH_CLASSES.index(cls), cpu, 1.0)


def expected_slowdown(victim: str, aggressors: list[tuple[str, float]]) -> float:
    """The documented formula, written out: sum_r sensitivity x P x (1 + convexity x P), P the
    neighbours' pressure per unit of node CPU they request."""
    total = 0.0
    for r in ("cpu", "memoryBandwidth", "io"):
        p = sum(DEFAULT_PRESSURE[c][r] * cpu / ALLOC for c, cpu in aggressors)
        total += DEFAULT_SENSITIVITY[victim][r] * p * (1 + CONVEXITY * p)
    return total


CASES = {
    # name: (victim class, victim cpu, aggressors (class, cpu))
    "alone": ("batch-cpu", 2000.0, []),
    "cpu job beside a cpu job": ("batch-cpu", 2000.0, [("batch-cpu", 4000.0)]),
    "memory job beside a memory job": ("batch-memory", 2000.0, [("batch-memory", 6000.0)]),
    "cpu job beside a service": ("batch-cpu", 1000.0, [("latency-critical", 2000.0)]),
    "io job beside two aggressors": ("batch-io", 1000.0, [("batch-io", 3000.0), ("batch-memory", 2000.0)]),
    "best-effort is never slowed": ("best-effort", 0.0, [("batch-memory", 8000.0)]),
}


@pytest.mark.parametrize(("victim", "cpu", "aggressors"), CASES.values(), ids=CASES.keys())
def test_finishes_after_its_work_at_the_truths_slowdown(victim, cpu, aggressors):
    host, progress, finished = world()
    for i, (cls, acpu) in enumerate(aggressors):
        progress.bound(f"aggressor-{i}", "n", pod(cls, acpu), ALLOC, None)  # runs until deleted
    progress.bound("victim", "n", pod(victim, cpu), ALLOC, 100.0)
    s = expected_slowdown(victim, aggressors)
    assert progress.slowdown("victim") == pytest.approx(s)
    host.advance(1e6)
    assert finished["victim"] == pytest.approx(100.0 * (1 + s))


MID_RUN = {
    # name: (aggressor arrives, aggressor leaves)
    "aggressor for a while": (20.0, 50.0),
    "aggressor from the start": (0.0, 30.0),
    "aggressor arrives and stays": (40.0, None),
}


@pytest.mark.parametrize(("arrive", "leave"), MID_RUN.values(), ids=MID_RUN.keys())
def test_work_is_conserved_across_slowdown_changes(arrive, leave):
    work, aggressor = 100.0, ("batch-memory", 6000.0)
    s = expected_slowdown("batch-memory", [aggressor])
    host, progress, finished = world()
    progress.bound("victim", "n", pod("batch-memory", 2000.0), ALLOC, work)
    host.advance(arrive)
    progress.bound("aggressor", "n", pod(*aggressor), ALLOC, None)
    if leave is None:
        expected = arrive + (work - arrive) * (1 + s)
    else:
        host.advance(leave)
        assert progress.remaining("victim") == pytest.approx(work - arrive - (leave - arrive) / (1 + s))
        progress.gone("aggressor", "n")
        expected = leave + work - arrive - (leave - arrive) / (1 + s)
    host.advance(1e6)
    assert finished == {"victim": pytest.approx(expected)}


def test_a_pod_deleted_before_its_end_never_finishes():
    host, progress, finished = world()
    progress.bound("victim", "n", pod("batch-cpu", 1000.0), ALLOC, 50.0)
    progress.bound("other", "n", pod("batch-cpu", 1000.0), ALLOC, 500.0)
    host.advance(10.0)
    progress.gone("victim", "n")
    host.advance(1e6)
    assert set(finished) == {"other"}
    # Alone from t=10 on: the rest of its work at full speed.
    s = expected_slowdown("batch-cpu", [("batch-cpu", 1000.0)])
    assert finished["other"] == pytest.approx(10.0 + 500.0 - 10.0 / (1 + s))


def test_pods_on_other_nodes_do_not_interfere():
    host, progress, finished = world()
    progress.bound("victim", "a", pod("batch-memory", 2000.0), ALLOC, 100.0)
    progress.bound("aggressor", "b", pod("batch-memory", 6000.0), ALLOC, None)
    host.advance(1e6)
    assert finished == {"victim": pytest.approx(100.0)}


# An aggressor's visits to the victim's node: (arrives after the previous event, stays for).
visits = st.lists(
    st.tuples(st.floats(0.0, 50.0), st.floats(0.1, 50.0), st.sampled_from(("batch-cpu", "batch-memory"))),
    max_size=6,
)


def run_visits(plan: list[tuple[float, float, str]], work: float) -> tuple[float, list[tuple[float, float]]]:
    """Finish time of a victim holding ``work``, with aggressors visiting its node as planned; and the
    (start, slowdown) pieces its rate went through, as the progress tracker reported them."""
    host, progress, finished = world()
    progress.bound("victim", "n", pod("batch-memory", 2000.0), ALLOC, work)
    pieces = [(0.0, progress.slowdown("victim") or 0.0)]
    t = 0.0
    for i, (gap, stay, cls) in enumerate(plan):
        t += gap
        host.advance(t)
        if "victim" in finished:
            break
        progress.bound(f"a{i}", "n", pod(cls, 4000.0), ALLOC, None)
        pieces.append((t, progress.slowdown("victim") or 0.0))
        t += stay
        host.advance(t)
        if "victim" in finished:
            break
        progress.gone(f"a{i}", "n")
        pieces.append((t, progress.slowdown("victim") or 0.0))
    host.advance(1e9)
    return finished["victim"], pieces


@settings(max_examples=60, deadline=None)
@given(plan=visits, work=st.floats(1.0, 200.0))
def test_work_done_integrates_to_the_pods_work(plan, work):
    end, pieces = run_visits(plan, work)
    starts = [p[0] for p in pieces if p[0] < end] + [end]
    rates = [1 / (1 + p[1]) for p in pieces if p[0] < end]
    done = sum(r * (b - a) for r, a, b in zip(rates, starts, starts[1:], strict=False))
    assert done == pytest.approx(work, rel=1e-9)
    assert end >= work - 1e-9  # interference never speeds work up


@settings(max_examples=40, deadline=None)
@given(plan=visits, work=st.floats(1.0, 200.0), extra=st.floats(0.1, 50.0), which=st.integers(0, 5))
def test_a_longer_visit_never_finishes_the_victim_sooner(plan, work, extra, which):
    if not plan:
        return
    i = which % len(plan)
    longer = [(g, s + extra if k == i else s, c) for k, (g, s, c) in enumerate(plan)]
    # The later visits keep their start times: the gap after the lengthened one shrinks by ``extra``
    # where it can, so only the lengthened visit changes.
    if i + 1 < len(plan):
        g, s, c = longer[i + 1]
        if g < extra:
            return
        longer[i + 1] = (g - extra, s, c)
    assert run_visits(longer, work)[0] >= run_visits(plan, work)[0] - 1e-9


def test_slowdowns_come_from_the_truth():
    """The tracker's slowdown is the truth's own (the judge reads the same numbers)."""
    _, progress, _ = world()
    progress.bound("victim", "n", pod("batch-cpu", 2000.0), ALLOC, 100.0)
    progress.bound("aggressor", "n", pod("batch-memory", 4000.0), ALLOC, None)
    inter = Interference(GroundTruth(workload_sensitivity_spread=0.0, convexity=CONVEXITY), seed=1)
    truth = inter.slowdown_arrays(
        np.zeros(2, dtype=np.int64),
        np.asarray([TRUTH_CLASSES.index("batch-cpu"), TRUTH_CLASSES.index("batch-memory")]),
        np.asarray([2000.0, 4000.0]),
        np.ones(2),
        np.asarray([ALLOC]),
    )
    assert progress.slowdown("victim") == pytest.approx(float(truth[0]))
