"""Flourish queries against the real Prometheus server the suite starts (tests/signals/conftest.py), and
the annotations that name them."""

from __future__ import annotations

import socket

import pytest

from harmonic.signals.feedback.prometheus import (
    FeedbackSpecError,
    FlourishSource,
    FlourishSpec,
    spec_from_annotations,
)

# A per-workload flourish series built from the exporter's Istio counters: the request rate each
# destination workload serves, labelled the way the loop expects (namespace, workload).
PER_WORKLOAD = (
    "label_replace(label_replace(sum by (destination_workload, destination_workload_namespace) "
    '(rate(istio_requests_total{reporter="source", source_workload!="unknown"}[5s])), '
    '"namespace", "$1", "destination_workload_namespace", "(.*)"), "workload", "$1", "destination_workload", "(.*)")'
)


def test_per_workload_series_are_read_with_their_values(prometheus):
    reports = FlourishSource(prometheus).read(PER_WORKLOAD)
    assert not isinstance(reports, str), reports
    got = {(r.namespace, r.workload, r.pod): r.value for r in reports}
    assert set(got) == {("shop", "cartservice", ""), ("shop", "productcatalog", "")}
    # the exporter publishes 20 + 4 requests/s to cartservice and 60 to productcatalog
    assert got[("shop", "cartservice", "")] == pytest.approx(24.0, rel=0.25)
    assert got[("shop", "productcatalog", "")] == pytest.approx(60.0, rel=0.25)


def test_per_pod_series_and_series_without_identity(prometheus):
    pod_query = f'label_replace({PER_WORKLOAD}, "pod", "$1-0", "workload", "(.*)")'
    reports = FlourishSource(prometheus).read(pod_query)
    assert not isinstance(reports, str)
    assert {(r.namespace, r.pod) for r in reports} == {
        ("shop", "cartservice-0"),
        ("shop", "productcatalog-0"),
    }
    # a series with neither pod nor workload labels names nobody: no usable series, no signal
    anonymous = FlourishSource(prometheus).read("sum(rate(istio_requests_total[5s]))")
    assert isinstance(anonymous, str) and "skipped" in anonymous


@pytest.mark.parametrize(
    "query",
    [
        "this is not promql(",
        "rate(istio_requests_total[5s])[1m:]",  # a range vector, not an instant vector
        "absent_metric_name_xyz",  # empty
        f"-1 * {PER_WORKLOAD}",  # negative values are refused, leaving nothing
    ],
)
def test_bad_queries_are_no_signal_not_errors(prometheus, query):
    assert isinstance(FlourishSource(prometheus).read(query), str)


def test_unreachable_prometheus_is_no_signal():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reason = FlourishSource(f"http://127.0.0.1:{port}", timeout=1).read(PER_WORKLOAD)
    assert isinstance(reason, str) and reason.startswith("unreachable")


def test_each_query_has_its_own_run_of_silence(prometheus, caplog):
    # an application whose metric does not exist yet (empty) is news once, then warns ever more rarely;
    # another query's answer does not end that run
    source = FlourishSource(prometheus, name="flourish")

    def level(query: str) -> list[int]:
        caplog.clear()
        with caplog.at_level("DEBUG", logger="harmonic.signals"):
            source.read(query)
        return [r.levelno for r in caplog.records if r.getMessage().startswith("flourish: no signal")]

    missing = "absent_metric_name_xyz"
    assert level(missing) == [20]
    assert level(PER_WORKLOAD) == []
    assert [level(missing) for _ in range(3)] == [[30], [10], [30]]


def test_annotations():
    ann = {
        "harmonic.dev/flourish-query": "histogram_quantile(0.99, rate(lat_bucket[1m]))",
        "harmonic.dev/flourish-goal": "minimize",
        "harmonic.dev/flourish-target": "250",
    }
    spec = spec_from_annotations("Deployment shop/cart", ann)
    assert spec == FlourishSpec(ann["harmonic.dev/flourish-query"], "minimize", 250.0)
    assert spec.violates(300) and not spec.violates(200)
    assert spec_from_annotations("x", {}) is None
    tput = spec_from_annotations(
        "x", {"harmonic.dev/flourish-query": "q", "harmonic.dev/flourish-goal": "maximize"}
    )
    assert tput == FlourishSpec("q", "maximize") and not tput.violates(0)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("harmonic.dev/flourish-goal", "fastest"),
        ("harmonic.dev/flourish-target", "NaN"),
        ("harmonic.dev/flourish-target", "-1"),
    ],
)
def test_bad_annotations_name_object_and_annotation(key, value):
    with pytest.raises(FeedbackSpecError, match=rf"Deployment shop/cart: metadata.annotations\[{key}\]"):
        spec_from_annotations("Deployment shop/cart", {"harmonic.dev/flourish-query": "q", key: value})
