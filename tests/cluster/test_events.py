"""Events are written as kube-scheduler's recorder writes them: shape, series aggregation, fallback."""

from __future__ import annotations

from harmonic.cluster.events import NOTE_LENGTH_LIMIT, EventRecorder, truncate_note
from harmonic.testing import pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import wait_until


def _pod(api: ApiServerDouble) -> dict:
    return api.create("pods", pod("p").obj())


def test_events_v1_shape(api: ApiServerDouble, transport):
    rec = EventRecorder(transport, hostname="host-1")
    rec.start()
    p = _pod(api)
    rec.event(
        p,
        "Warning",
        "FailedScheduling",
        "Scheduling",
        "0/1 nodes are available: 1 Too many pods.",
        "harmonic",
    )
    (ev,) = wait_until(lambda: api.events())
    rec.stop()
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["metadata"]["name"].startswith("p.") and ev["metadata"]["namespace"] == "default"
    assert ev["reportingController"] == "harmonic" and ev["reportingInstance"] == "harmonic-host-1"
    assert ev["regarding"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": p["metadata"]["uid"],
        "apiVersion": "v1",
        "resourceVersion": p["metadata"]["resourceVersion"],
    }
    assert (ev["type"], ev["reason"], ev["action"]) == ("Warning", "FailedScheduling", "Scheduling")
    assert ev["note"] == "0/1 nodes are available: 1 Too many pods."
    assert ev["eventTime"].endswith("Z") and len(ev["eventTime"]) == len("2026-01-01T00:00:00.000000Z")


def test_repeats_become_a_series(api: ApiServerDouble, transport):
    rec = EventRecorder(transport, workers=1)
    rec.start()
    p = _pod(api)
    for _ in range(4):
        rec.event(p, "Warning", "FailedScheduling", "Scheduling", "no room", "harmonic")
    wait_until(lambda: api.stats().requests["patch events.k8s.io/events"] == 1)
    # The first repeat patches count 2; later ones count locally until the series is flushed.
    assert api.events()[0]["series"]["count"] == 2
    rec.flush_series_now()
    wait_until(lambda: api.events()[0]["series"]["count"] == 4)
    rec.stop()
    assert api.stats().requests["create events.k8s.io/events"] == 1


def test_core_v1_fallback_when_the_server_lacks_events_v1(api: ApiServerDouble, transport):
    api.inject(status=404, path="^/apis/events.k8s.io/v1$")
    rec = EventRecorder(transport)
    rec.start()
    assert rec.api == "v1"
    rec.event(_pod(api), "Normal", "Scheduled", "Binding", "Successfully assigned default/p to n", "harmonic")
    (ev,) = wait_until(lambda: api.events())
    rec.stop()
    assert ev["involvedObject"]["name"] == "p" and ev["source"] == {"component": "harmonic"}
    assert ev["message"] == "Successfully assigned default/p to n" and ev["count"] == 1


def test_unreachable_server_is_retried_and_rejections_are_dropped(api: ApiServerDouble, transport):
    rec = EventRecorder(transport, retry_sleep=0.02)
    rec.start()
    fault = api.inject(status=503, path="/events$", times=3)
    rec.event(_pod(api), "Normal", "Scheduled", "Binding", "ok", "harmonic")
    wait_until(lambda: api.events())
    assert fault.hits == 3
    api.inject(status=422, path="/events$")
    rec.event(api.create("pods", pod("q").obj()), "Normal", "Scheduled", "Binding", "ok", "harmonic")
    rec.stop()
    assert len(api.events()) == 1


def test_long_notes_are_truncated_as_upstream():
    assert truncate_note("x" * NOTE_LENGTH_LIMIT) == "x" * NOTE_LENGTH_LIMIT
    long = truncate_note("x" * 5000)
    assert len(long) == NOTE_LENGTH_LIMIT and long.endswith(" ...")
