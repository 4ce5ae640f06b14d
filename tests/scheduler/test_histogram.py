"""The hot-path histogram is exposed exactly as prometheus_client's Histogram would be."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, disable_created_metrics, generate_latest
from prometheus_client import Histogram as ReferenceHistogram

from harmonic.scheduler.histogram import Histogram

BUCKETS = [0.0001 * 2**i for i in range(12)]
LABELS = ["extension_point", "status", "profile"]


def exposition(observations: list[tuple[tuple[str, str, str], float]]) -> tuple[bytes, bytes]:
    disable_created_metrics()  # type: ignore[no-untyped-call]  # as SchedulerMetrics does
    ours_reg, ref_reg = CollectorRegistry(), CollectorRegistry()
    ours = Histogram("x_duration_seconds", "How long.", LABELS, BUCKETS, ours_reg)
    ref = ReferenceHistogram("x_duration_seconds", "How long.", LABELS, buckets=BUCKETS, registry=ref_reg)
    for labels, value in observations:
        ours.labels(*labels).observe(value)
        ref.labels(*labels).observe(value)
    return generate_latest(ours_reg), generate_latest(ref_reg)


def test_bucket_bounds_count_as_le_and_large_values_go_to_inf():
    obs = [(("Filter", "Success", "p"), v) for v in (0.0, 0.0001, 0.00010001, 0.0002, 0.2048, 0.3, 5.0)]
    obs.append((("Bind", "Error", "p"), 0.001))
    ours, ref = exposition(obs)
    assert ours == ref
    assert (
        b'x_duration_seconds_bucket{extension_point="Filter",le="0.0001",profile="p",status="Success"} 2.0'
        in ours
    )
    assert (
        b'x_duration_seconds_bucket{extension_point="Filter",le="+Inf",profile="p",status="Success"} 7.0'
        in ours
    )


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.tuples(
                st.sampled_from(["PreFilter", "Score"]), st.sampled_from(["Success", "Error"]), st.just("p")
            ),
            st.floats(min_value=0, max_value=10, allow_nan=False),
        ),
        max_size=40,
    )
)
def test_exposition_matches_prometheus_client(observations):
    ours, ref = exposition(observations)
    assert ours == ref


def test_observations_from_many_threads_are_all_counted():
    reg = CollectorRegistry()
    h = Histogram("y_seconds", "Y.", ["verb"], [0.5, 1.0], reg)
    child = h.labels("bind")

    def observe() -> None:
        for _ in range(2000):
            child.observe(0.7)

    threads = [threading.Thread(target=observe) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert b'y_seconds_count{verb="bind"} 16000.0' in generate_latest(reg)
    assert b'y_seconds_bucket{le="0.5",verb="bind"} 0.0' in generate_latest(reg)
