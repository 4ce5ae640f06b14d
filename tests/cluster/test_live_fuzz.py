"""The live fuzzer (issue 33): hostile objects through the API while ``harmonic run`` and ``harmonic
extender`` run. A short deterministic pass here; ``scripts/fuzz.py --live N`` runs it at length."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harmonic.testing.hostile import BIND, HOLD, LOGGED, QUIET, REPORT, SETTLE, HostileObjects, Made
from harmonic.testing.livefuzz import _judge_one, fuzz_against_double


def test_a_short_pass_finds_nothing_wrong(tmp_path: Path) -> None:
    report = fuzz_against_double(150, seed=7, workdir=tmp_path, settle=60)
    assert report.violations == [], report.summary()
    assert sum(report.objects.values()) == 150
    assert report.exits == {"run": 0, "extender": 0}
    assert report.pods_bound >= report.pods_to_bind > 0
    # The pass met every kind of hostile object it judges.
    assert {BIND, REPORT, SETTLE, HOLD, LOGGED, QUIET} <= set(report.expectations)


def test_the_stream_is_deterministic_and_in_the_shapes_kube_apiserver_accepts() -> None:
    a, b = HostileObjects(3).take(500), HostileObjects(3).take(500)
    assert [m.obj for m in a] == [m.obj for m in b]
    names = Counter((m.kind, m.key) for m in a)
    assert max(names.values()) == 1  # unique
    assert all(len(m.name) <= 253 for m in a)
    assert all(len(m.name) <= 63 for m in a if m.kind == "Namespace")


def _pod(expect: str) -> Made:
    return Made("Pod", {"metadata": {"name": "p", "namespace": "default"}}, expect, "test")


def _quota(expect: str) -> Made:
    return Made("ElasticQuota", {"metadata": {"name": "q", "namespace": "ns"}}, expect, "test")


@pytest.mark.parametrize(
    ("made", "node", "events", "run_lines", "wrong"),
    [
        (_pod(BIND), "n", 0, 0, ""),
        (_pod(BIND), None, 3, 0, "not bound"),
        (_pod(REPORT), None, 1, 0, ""),
        (_pod(REPORT), None, 0, 1, ""),
        (_pod(REPORT), None, 0, 0, "no FailedScheduling event, no log line"),
        (_pod(REPORT), "n", 1, 0, "bound to n"),
        (_pod(REPORT), None, 1, 2, "named by 2 warning/error lines"),
        (_pod(SETTLE), None, 0, 0, "neither bound nor reported"),
        (_pod(SETTLE), "n", 0, 0, ""),
        (_pod(HOLD), "n", 0, 0, "must wait"),
        (_quota(LOGGED), None, 0, 0, "named by 0 log lines"),
        (_quota(LOGGED), None, 0, 1, ""),
        (_quota(QUIET), None, 0, 1, "named by 1 warning/error lines"),
    ],
)
def test_the_judge(made: Made, node: str | None, events: int, run_lines: int, wrong: str) -> None:
    found = _judge_one(made, node, events, {"run": Counter({f"{made.kind} {made.key}": run_lines})})
    assert (wrong in found[0]) if wrong else not found, found
