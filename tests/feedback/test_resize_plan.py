"""Splitting a pod-level target over containers, limits and resizePolicy (``feedback.resize``)."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.feedback.resize import opted_in, plan_resize, recommendation, resize_state, with_resources


def _c(
    name: str, cpu: str, mem: str, limits: dict[str, str] | None = None, /, **policy: str
) -> dict[str, Any]:
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": mem}}
    if limits:
        res["limits"] = limits
    c: dict[str, Any] = {"name": name, "resources": res}
    if policy:
        c["resizePolicy"] = [{"resourceName": r, "restartPolicy": p} for r, p in policy.items()]
    return c


def _pod(*containers: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "annotations": annotations or {}},
        "spec": {"containers": list(containers)},
    }


@pytest.mark.parametrize(
    ("case", "pod", "cpu", "mem", "want", "restarts"),
    [
        (
            "split in proportion to the current requests",
            _pod(_c("app", "3", "3Gi"), _c("sidecar", "1", "1Gi")),
            2000,
            2 * 2**30,
            [
                ("app", {"cpu": "1500m", "memory": "1536Mi"}, None),
                ("sidecar", {"cpu": "500m", "memory": "512Mi"}, None),
            ],
            (),
        ),
        (
            "limits keep their ratio; RestartContainer on a changed resource restarts",
            _pod(_c("app", "2", "1Gi", {"cpu": "4"}, cpu="RestartContainer")),
            1000,
            2**30,
            [("app", {"cpu": "1000m"}, {"cpu": "2000m"})],
            ("app",),
        ),
        (
            "a memory limit is not lowered without RestartContainer (memory left as is)",
            _pod(_c("app", "2", "4Gi", {"memory": "4Gi"})),
            1000,
            2**30,
            [("app", {"cpu": "1000m"}, None)],
            (),
        ),
    ],
)
def test_plan(
    case: str, pod: dict[str, Any], cpu: float, mem: float, want: list[Any], restarts: tuple[str, ...]
) -> None:
    plan = plan_resize(pod, cpu, mem)
    assert plan.patch is not None, case
    got = [
        (c["name"], c["resources"]["requests"], c["resources"].get("limits"))
        for c in plan.patch["spec"]["containers"]
    ]
    assert got == want, case
    assert plan.restarts == restarts, case
    resized = with_resources(pod, plan.patch)
    assert resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] == want[0][1]["cpu"]
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] != want[0][1]["cpu"]  # not mutated


def test_nothing_to_change_is_no_patch() -> None:
    assert plan_resize(_pod(_c("app", "1", "1Gi")), 1000, 2**30).patch is None


def test_recommendation_has_vpa_status_shape() -> None:
    rec = recommendation(_pod(_c("app", "3", "3Gi"), _c("sidecar", "1", "1Gi")), 2000, 2**30)
    assert rec == {
        "containerRecommendations": [
            {"containerName": "app", "target": {"cpu": "1500m", "memory": "768Mi"}},
            {"containerName": "sidecar", "target": {"cpu": "500m", "memory": "256Mi"}},
        ]
    }


@pytest.mark.parametrize(
    ("annotations", "auto"),
    [
        ({"harmonic.dev/resize": "auto"}, True),
        ({"harmonic.dev/resize": "Auto "}, True),
        ({"harmonic.dev/resize": "off"}, False),
        ({}, False),
    ],
)
def test_opt_in(annotations: dict[str, str], auto: bool) -> None:
    assert opted_in(_pod(annotations=annotations)) is auto


@pytest.mark.parametrize(
    ("conditions", "state"),
    [
        (
            [{"type": "PodResizePending", "status": "True", "reason": "Infeasible", "message": "m"}],
            "Infeasible",
        ),
        ([{"type": "PodResizePending", "status": "True", "reason": "Deferred"}], "Deferred"),
        ([{"type": "PodResizeInProgress", "status": "True"}], "InProgress"),
        ([{"type": "Ready", "status": "True"}], ""),
    ],
)
def test_resize_state_reads_the_1_33_conditions(conditions: list[dict[str, str]], state: str) -> None:
    assert resize_state({"status": {"conditions": conditions}})[0] == state
