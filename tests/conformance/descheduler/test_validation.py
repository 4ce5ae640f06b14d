"""descheduler's ``validation_test.go`` of the translated plugins, every case, through Harmonic's policy
loader (which validates args as descheduler's ``Validate...Args`` do): DefaultEvictor, LowNodeUtilization,
HighNodeUtilization, PodLifeTime, RemoveDuplicates, RemovePodsViolatingInterPodAntiAffinity,
RemovePodsViolatingNodeAffinity and RemovePodsViolatingTopologySpreadConstraint. A case expecting an
error checks the message names what upstream's names (Harmonic prefixes the file and field path)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import EXTENDED, load_error

BAD_NS = {"include": ["default"], "exclude": ["kube-system"]}
BAD_SELECTOR = {"matchExpressions": [{"operator": "In"}]}


def V(name: str, plugin: str, args: dict[str, Any], error: str | None, point: str = "deschedule"):
    return pytest.param(point, plugin, args, error, id=f"{plugin}: {name}")


def low(thresholds: dict[str, float], targets: dict[str, float], **more: Any) -> dict[str, Any]:
    return {"thresholds": thresholds, "targetThresholds": targets, **more}


CM, CM_EXT = {"cpu": 20, "memory": 20}, {"cpu": 20, "memory": 20, EXTENDED: 20}
HI, HI_EXT = {"cpu": 80, "memory": 80}, {"cpu": 80, "memory": 80, EXTENDED: 80}
LNU, HNU = "LowNodeUtilization", "HighNodeUtilization"
PVC = "PodsWithPVC"

CASES = [
    # defaultevictor/validation_test.go, TestValidateDefaultEvictorArgs
    V(
        "passing invalid priority",
        "DefaultEvictor",
        {"priorityThreshold": {"value": 1, "name": "priority-name"}},
        "only one of value and name",
    ),
    V(
        "passing invalid no eviction policy",
        "DefaultEvictor",
        {"noEvictionPolicy": "invalid-no-eviction-policy"},
        "noEvictionPolicy",
    ),
    V(
        "Valid configuration with no deprecated fields",
        "DefaultEvictor",
        {"podProtections": {"defaultDisabled": [], "extraEnabled": []}},
        None,
    ),
    V(
        "Valid configuration: both Disabled and ExtraEnabled",
        "DefaultEvictor",
        {
            "podProtections": {
                "defaultDisabled": ["DaemonSetPods", "PodsWithLocalStorage"],
                "extraEnabled": [PVC],
            }
        },
        None,
    ),
    V(
        "Valid configuration with ExtraEnabled",
        "DefaultEvictor",
        {"podProtections": {"extraEnabled": [PVC]}},
        None,
    ),
    V(
        "Invalid configuration: Deprecated field used with Disabled",
        "DefaultEvictor",
        {"evictLocalStoragePods": True, "podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
        "cannot use deprecated fields alongside podProtections",
    ),
    V(
        "Invalid configuration: Deprecated field used with ExtraPodProtections",
        "DefaultEvictor",
        {"evictDaemonSetPods": True, "podProtections": {"extraEnabled": [PVC]}},
        "cannot use deprecated fields alongside podProtections",
    ),
    V("MinReplicas warning logged but no error", "DefaultEvictor", {"minReplicas": 1}, None),
    V(
        "Invalid ExtraEnabled: Unknown policy",
        "DefaultEvictor",
        {"podProtections": {"extraEnabled": ["InvalidPolicy"]}},
        "invalid pod protection policy 'InvalidPolicy'",
    ),
    V(
        "Invalid ExtraEnabled: Misspelled policy",
        "DefaultEvictor",
        {"podProtections": {"extraEnabled": ["PodsWithPVCC"]}},
        "invalid pod protection policy 'PodsWithPVCC'",
    ),
    V(
        "Invalid ExtraEnabled: Policy from DefaultDisabled list",
        "DefaultEvictor",
        {"podProtections": {"extraEnabled": ["DaemonSetPods"]}},
        "extraEnabled: invalid pod protection policy 'DaemonSetPods'",
    ),
    V(
        "Invalid DefaultDisabled: Unknown policy",
        "DefaultEvictor",
        {"podProtections": {"defaultDisabled": ["InvalidPolicy"]}},
        "invalid pod protection policy 'InvalidPolicy'",
    ),
    V(
        "Invalid DefaultDisabled: Misspelled policy",
        "DefaultEvictor",
        {"podProtections": {"defaultDisabled": ["PodsWithLocalStorag"]}},
        "invalid pod protection policy 'PodsWithLocalStorag'",
    ),
    V(
        "Invalid DefaultDisabled: Policy from ExtraEnabled list",
        "DefaultEvictor",
        {"podProtections": {"defaultDisabled": [PVC]}},
        "defaultDisabled: invalid pod protection policy 'PodsWithPVC'",
    ),
    V(
        "Invalid ExtraEnabled duplicate",
        "DefaultEvictor",
        {"podProtections": {"extraEnabled": [PVC, PVC]}},
        "extraEnabled contains duplicate entries",
    ),
    V(
        "Invalid DefaultDisabled duplicate",
        "DefaultEvictor",
        {"podProtections": {"defaultDisabled": ["PodsWithLocalStorage", "PodsWithLocalStorage"]}},
        "defaultDisabled contains duplicate entries",
    ),
    V(
        "Invalid DefaultDisabled duplicate and Invalid ExtraEnabled duplicate and passing invalid no eviction policy",
        "DefaultEvictor",
        {
            "noEvictionPolicy": "invalid-no-eviction-policy",
            "podProtections": {
                "extraEnabled": [PVC, PVC],
                "defaultDisabled": ["PodsWithLocalStorage", "PodsWithLocalStorage", "PodsWithoutPDB"],
            },
        },
        # Upstream aggregates every error; Harmonic reports the first it meets.
        "",
    ),
    V(
        "Protected storage classes without storage class name",
        "DefaultEvictor",
        {
            "podProtections": {
                "extraEnabled": [PVC],
                "config": {
                    "PodsWithPVC": {
                        "protectedStorageClasses": [
                            {"name": ""},
                            {"name": "protected-storage-class-0"},
                            {"name": ""},
                            {"name": "protected-storage-class-1"},
                        ]
                    }
                },
            }
        },
        "protectedStorageClasses[0] name cannot be empty",
    ),
    # nodeutilization/validation_test.go, TestValidateLowNodeUtilizationPluginConfig
    V(
        "passing invalid thresholds",
        LNU,
        low({"cpu": 20, "memory": 120}, HI),
        "memory threshold not in [0, 100] range",
        "balance",
    ),
    V(
        "thresholds and targetThresholds configured different num of resources",
        LNU,
        low(CM, {**HI, "pods": 80}),
        "thresholds and targetThresholds configured different resources",
        "balance",
    ),
    V(
        "thresholds and targetThresholds configured different resources",
        LNU,
        low(CM, {"cpu": 80, "pods": 80}),
        "thresholds and targetThresholds configured different resources",
        "balance",
    ),
    V(
        "thresholds' CPU config value is greater than targetThresholds'",
        LNU,
        low({"cpu": 90, "memory": 20}, HI),
        "thresholds' cpu percentage is greater than targetThresholds'",
        "balance",
    ),
    V(
        "only thresholds configured extended resource",
        LNU,
        low(CM_EXT, HI),
        "configured different resources",
        "balance",
    ),
    V(
        "only targetThresholds configured extended resource",
        LNU,
        low(CM, HI_EXT),
        "configured different resources",
        "balance",
    ),
    V(
        "thresholds and targetThresholds configured different extended resources",
        LNU,
        low(CM_EXT, {**HI, "example.com/bar": 80}),
        "configured different resources",
        "balance",
    ),
    V(
        "thresholds' extended resource config value is greater than targetThresholds'",
        LNU,
        low({**CM, EXTENDED: 90}, {**HI, EXTENDED: 20}),
        f"thresholds' {EXTENDED} percentage is greater than targetThresholds'",
        "balance",
    ),
    V("passing valid plugin config", LNU, low(CM, HI), None, "balance"),
    V("passing valid plugin config with extended resource", LNU, low(CM_EXT, HI_EXT), None, "balance"),
    V(
        "setting both kubernetes metrics source and metricsserver",
        LNU,
        low(CM_EXT, HI_EXT, metricsUtilization={"metricsServer": True, "source": "KubernetesMetrics"}),
        'it is not allowed to set both "KubernetesMetrics" source and metricsServer',
        "balance",
    ),
    V(
        "missing prometheus query",
        LNU,
        low(CM_EXT, HI_EXT, metricsUtilization={"source": "Prometheus"}),
        'prometheus query is required when metrics source is set to "Prometheus"',
        "balance",
    ),
    V(
        "prometheus set when source set to kubernetes metrics",
        LNU,
        low(CM_EXT, HI_EXT, metricsUtilization={"source": "KubernetesMetrics", "prometheus": {}}),
        'prometheus configuration is not allowed to set when source is set to "KubernetesMetrics"',
        "balance",
    ),
    # TestValidateHighNodeUtilizationPluginConfig
    V(
        "valid configuration with CPU and memory",
        HNU,
        {"thresholds": {"cpu": 80, "memory": 90}, "evictionModes": ["OnlyThresholdingResources"]},
        None,
        "balance",
    ),
    V(
        "valid configuration with extended resource",
        HNU,
        {"thresholds": {"cpu": 85, EXTENDED: 95}, "evictionModes": ["OnlyThresholdingResources"]},
        None,
        "balance",
    ),
    V("empty thresholds", HNU, {"thresholds": {}}, "no resource threshold is configured", "balance"),
    V(
        "threshold below minimum (0%)",
        HNU,
        {"thresholds": {"cpu": -1}},
        "cpu threshold not in [0, 100] range",
        "balance",
    ),
    V(
        "threshold above maximum (100%)",
        HNU,
        {"thresholds": {"memory": 101}},
        "memory threshold not in [0, 100] range",
        "balance",
    ),
    V(
        "multiple thresholds with one out of range",
        HNU,
        {"thresholds": {"cpu": 50, "memory": 150}},
        "memory threshold not in [0, 100] range",
        "balance",
    ),
    V(
        "evictableNamespaces with Exclude (allowed)",
        HNU,
        {"thresholds": {"cpu": 80}, "evictableNamespaces": {"exclude": ["ns1", "ns2"]}},
        None,
        "balance",
    ),
    V(
        "invalid eviction mode",
        HNU,
        {"thresholds": {"cpu": 80}, "evictionModes": ["InvalidMode"]},
        "evictionModes[0]",
        "balance",
    ),
    V(
        "missing eviction modes (nil) - should be allowed (treated as empty)",
        HNU,
        {"thresholds": {"cpu": 80}},
        None,
        "balance",
    ),
    V(
        "empty eviction modes slice - should be allowed",
        HNU,
        {"thresholds": {"cpu": 80}, "evictionModes": []},
        None,
        "balance",
    ),
    # podlifetime/validation_test.go, TestValidateRemovePodLifeTimeArgs
    V("valid arg, no errors", "PodLifeTime", {"maxPodLifeTimeSeconds": 1, "states": ["Running"]}, None),
    V(
        "Pod Status Reasons Succeeded or Failed",
        "PodLifeTime",
        {"maxPodLifeTimeSeconds": 1, "states": ["Succeeded", "Failed"]},
        None,
    ),
    V(
        "Pod Status Reasons CrashLoopBackOff ",
        "PodLifeTime",
        {"maxPodLifeTimeSeconds": 1, "states": ["CrashLoopBackOff"]},
        None,
    ),
    V(
        "nil MaxPodLifeTimeSeconds arg, expects errors",
        "PodLifeTime",
        {},
        "at least one filtering criterion must be specified",
    ),
    V(
        "invalid pod state arg, expects errors",
        "PodLifeTime",
        {"maxPodLifeTimeSeconds": 1, "states": ["InvalidState"]},
        "states must be one of",
    ),
    V(
        "nil MaxPodLifeTimeSeconds arg and invalid pod state arg, expects errors",
        "PodLifeTime",
        {"states": ["InvalidState"]},
        "states must be one of",
    ),
    # removeduplicates/validation_test.go
    V(
        "valid namespace args, no errors",
        "RemoveDuplicates",
        {"excludeOwnerKinds": ["Job"], "namespaces": {"include": ["default"]}},
        None,
        "balance",
    ),
    V(
        "invalid namespaces args, expects error",
        "RemoveDuplicates",
        {"excludeOwnerKinds": ["Job"], "namespaces": BAD_NS},
        "only one of Include/Exclude namespaces can be set",
        "balance",
    ),
    # removepodsviolatinginterpodantiaffinity/validation_test.go
    *[
        V(name, "RemovePodsViolatingInterPodAntiAffinity", args, error)
        for name, args, error in (
            ("valid namespace args, no errors", {"namespaces": {"include": ["default"]}}, None),
            (
                "invalid namespaces args, expects error",
                {"namespaces": BAD_NS},
                "only one of Include/Exclude namespaces",
            ),
            (
                "valid label selector args, no errors",
                {"labelSelector": {"matchLabels": {"role.kubernetes.io/node": ""}}},
                None,
            ),
            ("invalid label selector args, expects errors", {"labelSelector": BAD_SELECTOR}, "labelSelector"),
        )
    ],
    # removepodsviolatingnodeaffinity/validation_test.go
    *[
        V(name, "RemovePodsViolatingNodeAffinity", args, error)
        for name, args, error in (
            ("nil NodeAffinityType args, expects errors", {}, "nodeAffinityType needs to be set"),
            (
                "empty NodeAffinityType args, expects errors",
                {"nodeAffinityType": []},
                "nodeAffinityType needs to be set",
            ),
            (
                "valid NodeAffinityType args, no errors",
                {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]},
                None,
            ),
            (
                "invalid namespaces args, expects error",
                {
                    "nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"],
                    "namespaces": BAD_NS,
                },
                "only one of Include/Exclude namespaces",
            ),
            (
                "nil NodeAffinityType args and invalid namespaces args, expects error",
                {"nodeAffinityType": [], "namespaces": BAD_NS},
                "",
            ),
        )
    ],
    # removepodsviolatingtopologyspreadconstraint/validation_test.go
    *[
        V(name, "RemovePodsViolatingTopologySpreadConstraint", args, error, "balance")
        for name, args, error in (
            ("valid namespace args, no errors", {"namespaces": {"include": ["default"]}}, None),
            (
                "invalid namespaces args, expects error",
                {"namespaces": BAD_NS},
                "only one of Include/Exclude namespaces",
            ),
            (
                "valid label selector args, no errors",
                {"labelSelector": {"matchLabels": {"role.kubernetes.io/node": ""}}},
                None,
            ),
            ("invalid label selector args, expects errors", {"labelSelector": BAD_SELECTOR}, "labelSelector"),
            ("valid constraints args, no errors", {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}, None),
            ("invalid constraints args, expects errors", {"constraints": ["foo"]}, "constraints[0]"),
        )
    ],
]


@pytest.mark.parametrize(("point", "plugin", "args", "error"), CASES)
def test_upstream_validation(point, plugin, args, error):
    if plugin == "DefaultEvictor":
        err = load_error(point, "RemovePodsViolatingNodeTaints", {}, evictor=args)
    else:
        err = load_error(point, plugin, args)
    if error is None:
        assert err is None
    else:
        assert err is not None and error in err, err
