"""Policy loading: descheduler's defaults, and errors that name the field."""

from __future__ import annotations

import pytest

from harmonic.rescheduler.policy import PolicyError, load_policy
from tests.rescheduler.helpers import policy, profile


def test_default_evictor_is_added_to_filter_and_pre_eviction_filter():
    p = load_policy(policy(profile("deschedule", "RemovePodsViolatingNodeTaints")))
    prof = p.profiles[0]
    assert prof.plugins["filter"] == ("DefaultEvictor",)
    assert prof.plugins["preEvictionFilter"] == ("DefaultEvictor",)
    assert prof.evictor_args.node_fit is False
    assert prof.evictor_args.protections() == {
        "PodsWithLocalStorage",
        "SystemCriticalPods",
        "FailedBarePods",
        "DaemonSetPods",
    }


def test_plans_work_without_plugin_config():
    p = load_policy(policy({"name": "p", "plugins": {"balance": {"enabled": ["MakeRoomForPending"]}}}))
    args = p.profiles[0].args["MakeRoomForPending"]
    assert args.pending_threshold == "1m" and args.max_moves_per_pod == 5


def test_json_tag_spelling_of_extension_points_is_accepted():
    p = load_policy(policy({"name": "p", "plugins": {"preevictionfilter": {"enabled": ["DefaultEvictor"]}}}))
    assert p.profiles[0].plugins["preEvictionFilter"] == ("DefaultEvictor",)


def test_limits_are_read():
    p = load_policy(
        policy(
            maxNoOfPodsToEvictPerNode=2,
            maxNoOfPodsToEvictPerNamespace=3,
            maxNoOfPodsToEvictTotal=4,
            nodeSelector="a=b",
        )
    )
    assert (p.max_per_node, p.max_per_namespace, p.max_total, p.node_selector) == (2, 3, 4, "a=b")


def low_node_utilization(metrics: dict) -> dict:
    args = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": metrics}
    return profile("balance", "LowNodeUtilization", args)


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        (policy(maxPodsToEvict=1), "maxPodsToEvict: unknown field"),
        (policy(maxNoOfPodsToEvictTotal=-1), "maxNoOfPodsToEvictTotal: -1 must be a non-negative integer"),
        ({**policy(), "apiVersion": "descheduler/v1alpha1"}, "apiVersion: expected descheduler/v1alpha2"),
        (
            policy({"name": "p", "plugins": {"balance": {"enabled": ["Nope"]}}}),
            "profiles[0].plugins.balance.enabled[0]: plugin 'Nope' is not registered",
        ),
        (
            policy({"name": "p", "plugins": {"deschedule": {"enabled": ["LowNodeUtilization"]}}}),
            "LowNodeUtilization is not a deschedule plugin",
        ),
        (
            policy({"name": "p", "plugins": {"sorting": {}}}),
            "profiles[0].plugins.sorting: unknown extension point",
        ),
        (policy({"name": "p", "color": 1}), "profiles[0].color: unknown field"),
        (
            policy({"name": "p", "pluginConfig": [{"name": "Nope", "args": {}}]}),
            "profiles[0].pluginConfig[0].name: plugin 'Nope' in pluginConfig not registered",
        ),
        (
            policy(
                profile(
                    "balance",
                    "LowNodeUtilization",
                    {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 10}},
                )
            ),
            "thresholds' cpu percentage is greater than targetThresholds'",
        ),
        (
            policy(
                profile(
                    "balance",
                    "LowNodeUtilization",
                    {"thresholds": {"cpu": 120}, "targetThresholds": {"cpu": 130}},
                )
            ),
            "thresholds: cpu threshold not in [0, 100] range",
        ),
        (
            policy(
                profile(
                    "balance",
                    "LowNodeUtilization",
                    {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "threshold": 1},
                )
            ),
            "profiles[0].pluginConfig[0].args.threshold: unknown field",
        ),
        (
            policy(profile("deschedule", "RemovePodsViolatingNodeAffinity")),
            "nodeAffinityType needs to be set",
        ),
        (
            policy(profile("deschedule", "PodLifeTime", {})),
            "at least one filtering criterion must be specified",
        ),
        (
            policy(
                profile("deschedule", "PodLifeTime", {"maxPodLifeTimeSeconds": 5, "states": ["Sleeping"]})
            ),
            "states must be one of",
        ),
        (
            policy(profile("deschedule", "RemovePodsHavingTooManyRestarts", {"podRestartThreshold": 0})),
            "invalid PodsHavingTooManyRestarts threshold",
        ),
        (
            policy(
                profile(
                    "deschedule",
                    "RemovePodsViolatingNodeTaints",
                    {"includedTaints": ["a"], "excludedTaints": ["b"]},
                )
            ),
            "either includedTaints or excludedTaints",
        ),
        (
            policy(
                profile(
                    "deschedule", "RemoveFailedPods", {"namespaces": {"include": ["a"], "exclude": ["b"]}}
                )
            ),
            "only one of Include/Exclude namespaces",
        ),
        (
            policy(
                profile(
                    "deschedule", "RemoveFailedPods", {}, {"priorityThreshold": {"value": 1, "name": "x"}}
                )
            ),
            "priorityThreshold: only one of value and name",
        ),
        (
            policy(
                profile(
                    "deschedule",
                    "RemoveFailedPods",
                    {},
                    {"evictLocalStoragePods": True, "podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
                )
            ),
            "cannot use deprecated fields",
        ),
        (
            policy(
                profile(
                    "deschedule", "RemoveFailedPods", {}, {"podProtections": {"extraEnabled": ["Everything"]}}
                )
            ),
            "invalid pod protection policy 'Everything'",
        ),
        (
            policy(profile("deschedule", "RemoveFailedPods", {}, {"noEvictionPolicy": "Sometimes"})),
            "profiles[0].pluginConfig[1].args.noEvictionPolicy",
        ),
        (
            policy(profile("balance", "MakeRoomForPending", {"pendingThreshold": "soon"})),
            "'soon' is not a duration",
        ),
        (
            policy(metricsProviders=[{"source": "KubernetesMetrics"}, {"source": "KubernetesMetrics"}]),
            "metricsProviders: metric provider 'KubernetesMetrics' is already configured",
        ),
        (
            policy(metricsCollector={"enabled": True}, metricsProviders=[{"source": "KubernetesMetrics"}]),
            "not allowed to combine metrics provider when metrics collector is enabled",
        ),
        (
            policy(metricsProviders=[{"source": "Prometheus"}]),
            "prometheus configuration is required",
        ),
        (
            policy(metricsProviders=[{"source": "Prometheus", "prometheus": {"url": "prometheus:9090"}}]),
            "error parsing prometheus URL",
        ),
        (
            policy(
                metricsProviders=[
                    {
                        "source": "Prometheus",
                        "prometheus": {
                            "url": "http://p:9090",
                            "authToken": {"secretReference": {"name": "s"}},
                        },
                    }
                ]
            ),
            "does not set both namespace and name",
        ),
        (
            policy(metricsProviders=[{"source": "Graphite"}]),
            "metricsProviders[0].source",
        ),
        (
            policy(
                metricsProviders=[{"source": "Prometheus", "prometheus": {"url": "http://p", "tls": True}}]
            ),
            "metricsProviders[0].prometheus.tls: unknown field",
        ),
        (
            policy(low_node_utilization({"source": "KubernetesMetrics"})),
            "LowNodeUtilization.args.metricsUtilization: source KubernetesMetrics needs metricsProviders",
        ),
        (
            policy(
                low_node_utilization({"source": "Prometheus", "prometheus": {"query": "q"}}),
                metricsProviders=[{"source": "Prometheus", "prometheus": {"url": "http://p:9090"}}],
            ),
            "thresholds are expected to specify a single instance of 'MetricResource' resource",
        ),
        (
            policy(low_node_utilization({"metricsServer": True, "source": "KubernetesMetrics"})),
            'not allowed to set both "KubernetesMetrics" source and metricsServer',
        ),
        (
            policy(
                profile(
                    "balance",
                    "LowNodeUtilization",
                    {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {}},
                )
            ),
            "metrics source is empty",
        ),
    ],
)
def test_errors_name_the_field(doc, where):
    with pytest.raises(PolicyError) as e:
        load_policy(doc, "policy.yaml")
    assert str(e.value).startswith("policy.yaml: ")
    assert where in str(e.value)
