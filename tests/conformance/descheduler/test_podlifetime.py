"""descheduler ``pkg/framework/plugins/podlifetime/pod_lifetime_test.go``: every case of
``TestPodLifeTime*``, ``TestStatesWithTerminatedReasons``, ``TestConditionFiltering``,
``TestTransitionTimeFiltering``, ``TestOwnerKindsFiltering``, ``TestStatesWithEphemeralContainers``,
``TestExitCodesFiltering``, ``TestCombinedFilters`` and ``TestValidation``, translated (expected counts
and names are upstream's).

Upstream's "now" is the wall clock and its old pods were created in 2009; here "now" is the suite's
fixed ``NOW`` and the same offsets are kept (605 s, 595 s, transitions 2 h and 1 min ago)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import (
    build_node,
    build_pod,
    chain,
    deleting,
    evicted_count,
    labels,
    load_error,
    phase,
    pvc,
    rs_owner,
)
from tests.rescheduler.helpers import ts

OLD = "2009-11-10T23:00:00Z"
NEW = ts(0)
OLD_TRANSITION = ts(2 * 3600)
NEW_TRANSITION = ts(60)
N1 = [build_node("n1", 2000, 3000, 10)]
NODE1 = [build_node("node1", 2000, 3000, 10)]


def created(at: str):
    def f(p):
        p["metadata"]["creationTimestamp"] = at

    return f


def pod1(name: str, at: str, apply=None, owned: bool = True, pending: bool = False) -> dict[str, Any]:
    """``buildTestPodForNode1`` / ``...WithRSOwnerRef...`` / ``...WithPendingPhase...``."""
    return build_pod(
        name,
        100,
        0,
        "n1",
        chain(created(at), rs_owner if owned else None, phase("Pending") if pending else None, apply),
    )


def pod(name: str, apply=None) -> dict[str, Any]:
    """``buildPod`` on node1 (owned by a ReplicaSet; no creation time, as upstream)."""
    return build_pod(name, 1, 1, "node1", chain(rs_owner, apply))


def reason(v: str):
    def f(p):
        p["status"]["reason"] = v

    return f


def statuses(kind: str, state: dict[str, Any]):
    def f(p):
        p["status"][kind] = [{"state": state}]

    return f


def waiting(r: str, kind: str = "containerStatuses"):
    return statuses(kind, {"waiting": {"reason": r}})


def terminated(kind: str = "containerStatuses", **t: Any):
    return statuses(kind, {"terminated": t})


def conditions(*cs: dict[str, Any]):
    def f(p):
        p["status"]["conditions"] = list(cs)

    return f


def cond(type_: str, status: str = "", reason: str = "", at: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"type": type_}
    if status:
        c["status"] = status
    if reason:
        c["reason"] = reason
    if at:
        c["lastTransitionTime"] = at
    return c


def job_owned(p):
    p["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "job1", "apiVersion": "batch/v1"}]


def C(name, args, pods, want, names=None, nodes=N1, evictor=None, **top):
    return pytest.param(args, pods, nodes, want, names, evictor or {}, top, id=name)


MAX = {"maxPodLifeTimeSeconds": 600}


def states(*s: str, **more: Any) -> dict[str, Any]:
    return {**MAX, "states": list(s), **more}


CASES = [
    # TestPodLifeTime
    C(
        "No pod should be evicted since pod terminating",
        {**MAX, "labelSelector": {"matchLabels": {"foo": "bar"}}},
        [pod1("p14", OLD, deleting), pod1("p15", OLD, deleting)],
        0,
    ),
    # TestPodLifeTime_EvictorConfiguration
    C(
        "Does not evict pvc pods with ignorePvcPods set to true",
        MAX,
        [pod1("p11", OLD, pvc())],
        0,
        evictor={"ignorePvcPods": True},
    ),
    C("Evicts pvc pods with ignorePvcPods set to false (or unset)", MAX, [pod1("p11", OLD, pvc())], 1),
    # TestPodLifeTime_GenericFiltering
    C(
        "1 pod matching label selector should be evicted",
        {**MAX, "labelSelector": {"matchLabels": {"foo": "bar"}}},
        [pod1("p12", OLD, labels(foo="bar")), pod1("p13", OLD, labels(foo="bar1"))],
        1,
        ["p12"],
    ),
    # TestPodLifeTime_EvictionLimits
    C(
        "2 Oldest pods should be evicted when maxPodsToEvictPerNode and maxPodsToEvictPerNamespace are not set",
        MAX,
        [pod1("p1", NEW), pod1("p2", OLD), pod1("p9", OLD, pending=True)],
        2,
        ["p2", "p9"],
    ),
    C(
        "1 Oldest pod should be evicted when maxPodsToEvictPerNamespace is set to 1",
        MAX,
        [pod1("p1", NEW), pod1("p2", OLD)],
        1,
        ["p2"],
        maxNoOfPodsToEvictPerNamespace=1,
    ),
    C(
        "1 Oldest pod should be evicted when maxPodsToEvictTotal is set to 1",
        MAX,
        [pod1("p1", NEW), pod1("p2", OLD)],
        1,
        ["p2"],
        maxNoOfPodsToEvictPerNamespace=2,
        maxNoOfPodsToEvictTotal=1,
    ),
    C(
        "1 Oldest pod should be evicted when maxPodsToEvictPerNode is set to 1",
        MAX,
        [pod1("p1", NEW), pod1("p2", OLD)],
        1,
        ["p2"],
        maxNoOfPodsToEvictPerNode=1,
    ),
    # TestPodLifeTime_ContainerWaitingReasons
    C(
        "Two pods, one with ContainerCreating state. 1 should be evicted.",
        states("ContainerCreating"),
        [
            pod1("p9", OLD, pending=True),
            build_pod(
                "container-creating-stuck",
                0,
                0,
                "n1",
                chain(waiting("ContainerCreating"), rs_owner, created(OLD)),
            ),
        ],
        1,
    ),
    C(
        "Two pods, one with PodInitializing state. 1 should be evicted.",
        states("PodInitializing"),
        [
            pod1("p9", OLD, pending=True),
            build_pod(
                "pod-initializing-stuck",
                0,
                0,
                "n1",
                chain(waiting("PodInitializing"), rs_owner, created(OLD)),
            ),
        ],
        1,
    ),
    *[
        C(
            f"1 pod with container status {r} should be evicted",
            states(r),
            [pod1("p9", OLD, waiting(r), pending=True)],
            1,
        )
        for r in ("ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError", "ErrImagePull")
    ],
    C(
        "1 pod with init container status CreateContainerError should not be evicted without includingInitContainers",
        states("CreateContainerError"),
        [pod1("p9", OLD, waiting("CreateContainerError", "initContainerStatuses"), pending=True)],
        0,
    ),
    C(
        "1 pod with init container status CreateContainerError should be evicted with includingInitContainers",
        states("CreateContainerError", includingInitContainers=True),
        [pod1("p9", OLD, waiting("CreateContainerError", "initContainerStatuses"), pending=True)],
        1,
    ),
    C(
        "1 pod with ephemeral container status CreateContainerError should not be evicted without includingEphemeralContainers",
        states("CreateContainerError"),
        [pod1("p9", OLD, waiting("CreateContainerError", "ephemeralContainerStatuses"), pending=True)],
        0,
    ),
    C(
        "1 pod with ephemeral container status CreateContainerError should be evicted with includingEphemeralContainers",
        states("CreateContainerError", includingEphemeralContainers=True),
        [pod1("p9", OLD, waiting("CreateContainerError", "ephemeralContainerStatuses"), pending=True)],
        1,
    ),
    *[
        C(
            f"1 pod with container status {r} should be evicted",
            states(r),
            [pod1("p9", OLD, waiting(r), pending=True)],
            1,
        )
        for r in ("CreateContainerError", "InvalidImageName")
    ],
    C(
        "1 pod with ImagePullBackOff status should be ignored when States filter is ContainerCreating",
        states("ContainerCreating"),
        [pod1("p9", OLD, waiting("ImagePullBackOff"), pending=True)],
        0,
    ),
    # TestPodLifeTime_PodStatusReasons
    *[
        C(
            f"1 pod with pod status reason {r} should be evicted",
            states(r),
            [pod1("p9", OLD, reason(r), pending=True)],
            1,
        )
        for r in ("NodeLost", "NodeAffinity", "Shutdown", "UnexpectedAdmissionError")
    ],
    # TestPodLifeTime_AgeThreshold
    C(
        "Two pods in the default namespace, 1 is new and 1 very is old. 1 should be evicted.",
        MAX,
        [pod1("p1", NEW), pod1("p2", OLD)],
        1,
        ["p2"],
    ),
    C(
        "Two pods in the default namespace, 2 are new and 0 are old. 0 should be evicted.",
        MAX,
        [pod1("p3", NEW), pod1("p4", NEW)],
        0,
    ),
    C(
        "Two pods in the default namespace, 1 created 605 seconds ago. 1 should be evicted.",
        MAX,
        [pod1("p5", NEW), pod1("p6", ts(605))],
        1,
        ["p6"],
    ),
    C(
        "Two pods in the default namespace, 1 created 595 seconds ago. 0 should be evicted.",
        MAX,
        [pod1("p7", NEW, owned=False), pod1("p8", ts(595), owned=False)],
        0,
    ),
    # TestPodLifeTime_PodPhaseStates
    C(
        "Two old pods with different states. 1 should be evicted.",
        states("Pending"),
        [pod1("p9", OLD, pending=True), pod1("p10", OLD, phase("Running"))],
        1,
        ["p9"],
    ),
    *[
        C(
            f"1 pod with pod status phase v1.Pod{ph} should be evicted",
            states(ph),
            [pod1("p16", OLD, phase(ph))],
            1,
        )
        for ph in ("Succeeded", "Failed", "Unknown")
    ],
    # TestStatesWithTerminatedReasons
    C(
        "evict pod with matching terminated reason via states",
        {"states": ["NodeAffinity"]},
        [pod("p1", chain(phase("Failed"), terminated(reason="NodeAffinity")))],
        1,
        nodes=NODE1,
    ),
    C(
        "evict pod with matching pod status reason via states",
        {"states": ["Shutdown"]},
        [pod("p1", chain(phase("Failed"), reason("Shutdown")))],
        1,
        nodes=NODE1,
    ),
    C(
        "states matches terminated reason on init container",
        {"states": ["CreateContainerConfigError"], "includingInitContainers": True},
        [pod("p1", terminated("initContainerStatuses", reason="CreateContainerConfigError"))],
        1,
        nodes=NODE1,
    ),
    C(
        "states does not match terminated reason on init container without flag",
        {"states": ["CreateContainerConfigError"]},
        [pod("p1", terminated("initContainerStatuses", reason="CreateContainerConfigError"))],
        0,
        nodes=NODE1,
    ),
    # TestConditionFiltering
    C(
        "evict pod with matching condition reason",
        {"conditions": [{"reason": "PodCompleted", "status": "True"}]},
        [
            pod("p1", conditions(cond("Initialized", "True", "PodCompleted", OLD_TRANSITION))),
            pod("p2", conditions(cond("Initialized", "True", "OtherReason", OLD_TRANSITION))),
        ],
        1,
        ["p1"],
        nodes=NODE1,
    ),
    C(
        "evict pod matching condition type only",
        {"conditions": [{"type": "Ready"}]},
        [pod("p1", conditions(cond("Ready", "False", at=OLD_TRANSITION)))],
        1,
        nodes=NODE1,
    ),
    C(
        "no matching conditions, 0 evictions",
        {"conditions": [{"reason": "PodCompleted"}]},
        [pod("p1", conditions(cond("Ready", "True", "SomethingElse")))],
        0,
        nodes=NODE1,
    ),
    # TestTransitionTimeFiltering
    C(
        "evict pod with old transition time",
        {
            "states": ["Succeeded"],
            "conditions": [
                {"reason": "PodCompleted", "status": "True", "minTimeSinceLastTransitionSeconds": 300}
            ],
        },
        [
            pod(
                "p1",
                chain(
                    phase("Succeeded"),
                    conditions(
                        cond("Initialized", "True", "PodCompleted", OLD_TRANSITION),
                        cond("Ready", "False", "PodCompleted", OLD_TRANSITION),
                    ),
                ),
            )
        ],
        1,
        ["p1"],
        nodes=NODE1,
    ),
    C(
        "do not evict pod with recent transition time",
        {"states": ["Succeeded"], "conditions": [{"minTimeSinceLastTransitionSeconds": 14400}]},
        [pod("p1", chain(phase("Succeeded"), conditions(cond("Ready", "False", at=NEW_TRANSITION))))],
        0,
        nodes=NODE1,
    ),
    C(
        "transition time scoped to matching conditions only",
        {"conditions": [{"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 300}]},
        [
            pod(
                "p1",
                conditions(
                    cond("Initialized", reason="PodCompleted", at=OLD_TRANSITION),
                    cond("Ready", reason="OtherReason", at=NEW_TRANSITION),
                ),
            )
        ],
        1,
        ["p1"],
        nodes=NODE1,
    ),
    C(
        "no conditions on pod, transition time filter returns false",
        {"states": ["Running"], "conditions": [{"minTimeSinceLastTransitionSeconds": 300}]},
        [pod("p1", phase("Running"))],
        0,
        nodes=NODE1,
    ),
    # TestOwnerKindsFiltering
    C(
        "exclude Job owner kind: Job-owned pod not evicted",
        {"states": ["Failed"], "ownerKinds": {"exclude": ["Job"]}},
        [pod("p1", chain(phase("Failed"), job_owned))],
        0,
        nodes=NODE1,
    ),
    C(
        "exclude Job owner kind: non-Job pod still evicted",
        {"states": ["Failed"], "ownerKinds": {"exclude": ["Job"]}},
        [pod("p1", chain(phase("Failed"), job_owned)), pod("p2", phase("Failed"))],
        1,
        ["p2"],
        nodes=NODE1,
    ),
    C(
        "include only Job owner kind",
        {"states": ["Failed"], "ownerKinds": {"include": ["Job"]}},
        [pod("p1", chain(phase("Failed"), job_owned)), pod("p2", phase("Failed"))],
        1,
        ["p1"],
        nodes=NODE1,
    ),
    # TestStatesWithEphemeralContainers
    C(
        "states matches terminated reason on ephemeral container",
        {"states": ["OOMKilled"], "includingEphemeralContainers": True},
        [pod("p1", terminated("ephemeralContainerStatuses", reason="OOMKilled"))],
        1,
        nodes=NODE1,
    ),
    C(
        "states does not match ephemeral container without flag",
        {"states": ["OOMKilled"]},
        [pod("p1", terminated("ephemeralContainerStatuses", reason="OOMKilled"))],
        0,
        nodes=NODE1,
    ),
    # TestExitCodesFiltering
    C(
        "evict pod with matching exit code",
        {"states": ["Failed"], "exitCodes": [1]},
        [pod("p1", chain(phase("Failed"), terminated(exitCode=1)))],
        1,
        nodes=NODE1,
    ),
    C(
        "exit code not matched, 0 evictions",
        {"states": ["Failed"], "exitCodes": [2]},
        [pod("p1", chain(phase("Failed"), terminated(exitCode=1)))],
        0,
        nodes=NODE1,
    ),
    # TestCombinedFilters
    C(
        "user scenario: Succeeded + PodCompleted condition + transition time threshold",
        {
            "states": ["Succeeded"],
            "conditions": [
                {"reason": "PodCompleted", "status": "True", "minTimeSinceLastTransitionSeconds": 300}
            ],
        },
        [
            pod(
                "stale-completed",
                chain(
                    phase("Succeeded"),
                    conditions(
                        cond("Initialized", "True", "PodCompleted", OLD_TRANSITION),
                        cond("Ready", "False", "PodCompleted", OLD_TRANSITION),
                    ),
                ),
            ),
            pod(
                "recent-completed",
                chain(
                    phase("Succeeded"),
                    conditions(cond("Initialized", "True", "PodCompleted", NEW_TRANSITION)),
                ),
            ),
            pod("running-pod", phase("Running")),
        ],
        1,
        ["stale-completed"],
        nodes=NODE1,
    ),
    C(
        "failed pod removal compat: Failed + min age + exclude Job",
        {"states": ["Failed"], "maxPodLifeTimeSeconds": 0, "ownerKinds": {"exclude": ["Job"]}},
        [
            pod("failed-rs", chain(phase("Failed"), terminated(reason="Error"))),
            pod("failed-job", chain(phase("Failed"), job_owned)),
        ],
        1,
        ["failed-rs"],
        nodes=NODE1,
    ),
]


@pytest.mark.parametrize(("plugin_args", "pods", "nodes", "want", "names", "evictor", "top"), CASES)
def test_upstream_case(plugin_args, pods, nodes, want, names, evictor, top):
    r = evicted_count("deschedule", "PodLifeTime", plugin_args, nodes + pods, evictor=evictor, top=top)
    assert len(r.log.evictions) == want
    if names is not None:
        assert {e.pod.name for e in r.log.evictions} >= set(names)


VALIDATION = [
    ("valid: states set", {"states": ["Running"]}, False),
    ("valid: conditions set", {"conditions": [{"reason": "PodCompleted"}]}, False),
    ("valid: maxPodLifeTimeSeconds set", {"maxPodLifeTimeSeconds": 600}, False),
    (
        "valid: states with maxPodLifeTimeSeconds",
        {"states": ["Running"], "maxPodLifeTimeSeconds": 600},
        False,
    ),
    (
        "valid: states with conditions",
        {"states": ["Succeeded"], "conditions": [{"reason": "PodCompleted"}]},
        False,
    ),
    ("valid: exitCodes only", {"exitCodes": [1]}, False),
    (
        "valid: condition with minTimeSinceLastTransitionSeconds",
        {"conditions": [{"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 300}]},
        False,
    ),
    (
        "valid: condition with only minTimeSinceLastTransitionSeconds",
        {"conditions": [{"minTimeSinceLastTransitionSeconds": 300}]},
        False,
    ),
    ("invalid: no filter criteria", {}, True),
    (
        "invalid: both include and exclude namespaces",
        {"states": ["Running"], "namespaces": {"include": ["a"], "exclude": ["b"]}},
        True,
    ),
    (
        "invalid: both include and exclude ownerKinds",
        {"states": ["Running"], "ownerKinds": {"include": ["Job"], "exclude": ["ReplicaSet"]}},
        True,
    ),
    ("invalid: bad state name", {"states": ["NotAState"]}, True),
    ("invalid: empty condition filter", {"conditions": [{}]}, True),
]


@pytest.mark.parametrize(("plugin_args", "invalid"), [pytest.param(a, i, id=n) for n, a, i in VALIDATION])
def test_upstream_validation(plugin_args, invalid):
    err = load_error("deschedule", "PodLifeTime", plugin_args)
    assert (err is not None) == invalid, err
