"""The VPA-style baseline: upstream's decaying histogram, P90 + 15%, minimums."""

from __future__ import annotations

import pytest

from harmonic.feedback.vpa import (
    HALF_LIFE_SECONDS,
    MIN_CPU_MILLIS,
    MIN_MEMORY_BYTES,
    DecayingHistogram,
    VpaRecommender,
)
from harmonic.signals.identity import WorkloadKey

W = WorkloadKey("ns", "app")


def test_percentile_is_the_upper_edge_of_the_bucket_reaching_it() -> None:
    h = DecayingHistogram(0.01, 1000.0)
    for v in range(1, 11):  # 0.1 .. 1.0 cores, equal weights
        h.add(v / 10, 1.0, 0.0)
    p90 = h.percentile(0.9)
    assert p90 is not None
    # the 9th sample (0.9 cores) reaches 90%; its bucket ends at most 5% above it
    assert 0.9 < p90 <= 0.9 * 1.05 + 0.01
    assert DecayingHistogram(0.01, 1000.0).percentile(0.9) is None


def test_older_samples_weigh_half_per_half_life() -> None:
    h = DecayingHistogram(0.01, 1000.0)
    h.add(1.0, 1.0, 0.0)
    h.add(4.0, 1.0, HALF_LIFE_SECONDS)  # twice the weight of the first
    # 1/3 of the weight at 1 core: the 30th percentile is there, the 40th already at 4 cores
    assert (h.percentile(0.3) or 0) < 1.1
    assert (h.percentile(0.4) or 0) > 3.9


def test_rescaling_the_reference_keeps_the_percentiles() -> None:
    h = DecayingHistogram(0.01, 1000.0)
    far = 150 * HALF_LIFE_SECONDS
    h.add(1.0, 1.0, far)
    h.add(2.0, 1.0, far)
    h.add(3.0, 2.0, far)
    # weights 1, 1, 2 at 1, 2, 3 cores: half the weight is reached at 2 cores
    assert h.percentile(0.5) == pytest.approx(2.0, abs=0.15)
    assert h.percentile(0.6) == pytest.approx(3.0, abs=0.2)


@pytest.mark.parametrize(
    ("cpu", "memory", "want_cpu", "want_memory"),
    [
        # P90 of a steady use, plus 15%
        (2000.0, 4 * 2**30, 2000 * 1.15, 4 * 2**30 * 1.15),
        # tiny use: upstream's minimums per pod
        (1.0, 2**20, MIN_CPU_MILLIS, MIN_MEMORY_BYTES),
    ],
)
def test_target_is_p90_plus_margin_with_minimums(
    cpu: float, memory: float, want_cpu: float, want_memory: float
) -> None:
    vpa = VpaRecommender()
    for t in range(60):
        vpa.add(W, cpu, memory, 4000.0, 60.0 * t)
    target = vpa.target(W)
    assert target is not None
    assert target.cpu_millis == pytest.approx(want_cpu, rel=0.06)
    assert target.memory_bytes == pytest.approx(want_memory, rel=0.06)
    assert vpa.target(WorkloadKey("ns", "other")) is None


def test_memory_counts_one_peak_per_window() -> None:
    vpa = VpaRecommender()
    vpa.add(W, 100.0, 1e9, 1000.0, 0.0)
    vpa.add(W, 100.0, 3e9, 1000.0, 60.0)  # replaces the window's peak
    target = vpa.target(W)
    assert target is not None
    assert target.memory_bytes == pytest.approx(3e9 * 1.15, rel=0.06)
