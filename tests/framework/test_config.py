"""KubeSchedulerConfiguration loading: defaults, merging, MultiPoint expansion, weights, validation.

Expected values come from upstream's tables: pkg/scheduler/apis/config/testing/defaults/defaults.go
(ExpandedPluginsV1), apis/config/v1/default_plugins_test.go (TestMergePlugins) and
framework/runtime/framework_test.go (TestNewFrameworkMultiPointExpansion), with the plugins
kube-scheduler no longer ships (EBSLimits, GCEPDLimits, AzureDiskLimits) removed.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from harmonic.framework.args import PluginArgs
from harmonic.framework.config import (
    DEFAULT_MULTIPOINT,
    ConfigError,
    PluginRef,
    PluginSet,
    load_config,
    load_config_file,
    merge_plugin_set,
    score_weights,
)
from harmonic.framework.interface import EXTENSION_POINTS, Plugin, QueueSortPlugin
from harmonic.framework.registry import Registry
from harmonic.plugins.registry import in_tree_registry

API = "kubescheduler.config.k8s.io/v1"


def fake_plugin(name: str, *points: str) -> type[Plugin]:
    """A plugin class that implements exactly ``points`` (no behaviour: only the loader looks at it)."""
    bases = tuple(EXTENSION_POINTS[p] for p in points) or (Plugin,)
    return type(name, bases, {"NAME": name})


# Extension points of kube-scheduler's default plugins (what ExpandedPluginsV1 shows of each).
UPSTREAM_POINTS: dict[str, tuple[str, ...]] = {
    "SchedulingGates": ("preEnqueue",),
    "PrioritySort": ("queueSort",),
    "NodeUnschedulable": ("filter",),
    "NodeName": ("filter",),
    "TaintToleration": ("filter", "preScore", "score"),
    "NodeAffinity": ("preFilter", "filter", "preScore", "score"),
    "NodePorts": ("preFilter", "filter"),
    "NodeResourcesFit": ("preFilter", "filter", "preScore", "score"),
    "VolumeRestrictions": ("preFilter", "filter"),
    "NodeVolumeLimits": ("preFilter", "filter"),
    "VolumeBinding": ("preFilter", "filter", "reserve", "preScore", "score", "preBind"),
    "VolumeZone": ("preFilter", "filter"),
    "PodTopologySpread": ("preFilter", "filter", "preScore", "score"),
    "InterPodAffinity": ("preFilter", "filter", "preScore", "score"),
    "DefaultPreemption": ("postFilter",),
    "NodeResourcesBalancedAllocation": ("preScore", "score"),
    "ImageLocality": ("score",),
    "DefaultBinder": ("bind",),
}

EXPANDED_DEFAULTS: dict[str, list[str]] = {
    "preEnqueue": ["SchedulingGates"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ],
    "postFilter": ["DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    ],
    "reserve": ["VolumeBinding"],
    "permit": [],
    "preBind": ["VolumeBinding"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}
EXPANDED_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


def upstream_registry() -> Registry:
    return Registry(fake_plugin(n, *pts) for n, pts in UPSTREAM_POINTS.items())


def test_default_multipoint_list_is_upstreams():
    assert [n for n, _ in DEFAULT_MULTIPOINT] == list(UPSTREAM_POINTS)


def test_default_profile_expands_like_kube_scheduler():
    cfg = load_config(None, upstream_registry())
    (p,) = cfg.profiles
    assert p.scheduler_name == "default-scheduler"
    assert {pt: list(p.plugins_at(pt)) for pt in EXTENSION_POINTS} == EXPANDED_DEFAULTS
    assert dict(p.weights) == EXPANDED_WEIGHTS
    assert cfg.percentage_of_nodes_to_score == 0
    assert p.percentage_of_nodes_to_score is None
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1.0, 10.0)


def test_default_profile_with_harmonics_plugins_keeps_upstream_order():
    """With the real registry, each extension point lists the implemented default plugins in
    upstream's order (plugins Harmonic lacks are simply absent)."""
    registry = in_tree_registry()
    (p,) = load_config(None, registry).profiles
    for point, names in EXPANDED_DEFAULTS.items():
        assert list(p.plugins_at(point)) == [n for n in names if n in registry]
    assert dict(p.weights) == {n: w for n, w in EXPANDED_WEIGHTS.items() if n in registry}


# ---------------------------------------------------------------------- TestMergePlugins
def ps(enabled: list[Any] = (), disabled: list[str] = ()) -> PluginSet:  # type: ignore[assignment]
    refs = [PluginRef(name=e) if isinstance(e, str) else PluginRef(name=e[0], weight=e[1]) for e in enabled]
    return PluginSet(enabled=refs, disabled=[PluginRef(name=d) for d in disabled])


def names_weights(s: PluginSet) -> tuple[list[tuple[str, int | None]], list[str]]:
    return [(p.name, p.weight) for p in s.enabled], [p.name for p in s.disabled]


MERGE_CASES = [
    ("AppendCustomPlugin", ps(["D1", "D2"]), ps(["C"]), ps(["D1", "D2", "C"])),
    ("InsertAfterDefaultPlugins2", ps(["D1", "D2"]), ps(["C", "D2"], ["D2"]), ps(["D1", "C", "D2"], ["D2"])),
    ("InsertBeforeAllPlugins", ps(["D1", "D2"]), ps(["C", "D1", "D2"], ["*"]), ps(["C", "D1", "D2"], ["*"])),
    ("ReorderDefaultPlugins", ps(["D1", "D2"]), ps(["D2", "D1"], ["*"]), ps(["D2", "D1"], ["*"])),
    ("ApplyNilCustomPlugin", ps(["D1", "D2"]), ps(), ps(["D1", "D2"])),
    (
        "CustomPluginOverrideDefaultPlugin",
        ps(["P1", "P2", "P3"]),
        ps([("P1", 2), ("P3", 3)]),
        ps([("P1", 2), "P2", ("P3", 3)]),
    ),
    (
        "OrderPreserveAfterOverride",
        ps(["P1", "P2", "P3"]),
        ps([("P2", 2), ("P1", 1)]),
        ps([("P1", 1), ("P2", 2), "P3"]),
    ),
    (
        "RepeatedCustomPlugin",
        ps(["P1", "P2", "P3"]),
        ps(["P1", ("P2", 2), "P3", ("P2", 4)]),
        ps(["P1", ("P2", 4), "P3", ("P2", 2)]),
    ),
    ("Append custom MultiPoint plugin", ps(["D1", "D2"]), ps(["C"]), ps(["D1", "D2", "C"])),
    (
        "Append disabled Multipoint plugins",
        ps(["D1", "D2"]),
        ps(["C", "C2"], ["D2"]),
        ps(["D1", "C", "C2"], ["D2"]),
    ),
    ("override default MultiPoint plugins with custom value", ps(["D"]), ps([("D", 5)]), ps([("D", 5)])),
    ("disabled MultiPoint plugin in default set", ps(["D"], ["D2"]), ps(["C"]), ps(["D", "C"], ["D2"])),
    ("multipoint with only disabled gets merged", ps(["D"]), ps([], ["D"]), ps([], ["D"])),
]


@pytest.mark.parametrize(("name", "default", "custom", "want"), MERGE_CASES, ids=[c[0] for c in MERGE_CASES])
def test_merge_plugin_set(name, default, custom, want):
    assert names_weights(merge_plugin_set(default, custom)) == names_weights(want)


# ---------------------------------------------------------------------- TestNewFrameworkMultiPointExpansion
ALL_BUT_PRE_ENQUEUE = tuple(p for p in EXTENSION_POINTS if p != "preEnqueue")
EXPANSION_REGISTRY = Registry(
    [
        fake_plugin("test-plugin", *ALL_BUT_PRE_ENQUEUE),
        fake_plugin("score-plugin-1", "preScore", "score"),
        fake_plugin("score-plugin-2", "score"),
        fake_plugin("score-with-normalize-plugin-1", "score"),
        fake_plugin("queue-sort-plugin", "queueSort"),
        fake_plugin("bind-plugin", "bind"),
    ]
)
T, S1, S2, SN = "test-plugin", "score-plugin-1", "score-plugin-2", "score-with-normalize-plugin-1"
EVERYWHERE_T = {p: [T] for p in ALL_BUT_PRE_ENQUEUE}


def refs(*items: Any) -> list[dict[str, Any]]:
    return [{"name": i} if isinstance(i, str) else {"name": i[0], "weight": i[1]} for i in items]


EXPANSION_CASES: list[tuple[str, dict[str, Any], dict[str, list[str]], dict[str, int]]] = [
    ("plugin expansion", {"multiPoint": {"enabled": refs((T, 5))}}, EVERYWHERE_T, {T: 5}),
    (
        "disable MultiPoint plugin at some extension points",
        {
            "multiPoint": {"enabled": refs(T)},
            "preScore": {"disabled": refs(T)},
            "score": {"disabled": refs(T)},
        },
        {**EVERYWHERE_T, "preScore": [], "score": []},
        {},
    ),
    (
        "Multiple MultiPoint plugins",
        {"multiPoint": {"enabled": refs(T, S1)}},
        {**EVERYWHERE_T, "preScore": [T, S1], "score": [T, S1]},
        {T: 1, S1: 1},
    ),
    (
        "disable MultiPoint extension",
        {"multiPoint": {"enabled": refs(T, S1)}, "preScore": {"disabled": refs("*")}},
        {**EVERYWHERE_T, "preScore": [], "score": [T, S1]},
        {T: 1, S1: 1},
    ),
    (
        "Reorder MultiPoint plugins (specified extension takes precedence)",
        {"multiPoint": {"enabled": refs(SN, T, S1)}, "score": {"enabled": refs(S1, T)}},
        {**EVERYWHERE_T, "preScore": [T, S1], "score": [S1, T, SN]},
        {S1: 1, T: 1, SN: 1},
    ),
    (
        "Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
        {"multiPoint": {"enabled": refs(T, S1)}, "score": {"enabled": refs(SN, S1, T)}},
        {**EVERYWHERE_T, "preScore": [T, S1], "score": [S1, T, SN]},
        {S1: 1, T: 1, SN: 1},
    ),
    (
        "Override MultiPoint plugins weights",
        {"multiPoint": {"enabled": refs(T, S1)}, "score": {"enabled": refs((S1, 5), (T, 3))}},
        {**EVERYWHERE_T, "preScore": [T, S1], "score": [S1, T]},
        {S1: 5, T: 3},
    ),
    (
        "disable and enable MultiPoint plugins with '*'",
        {"multiPoint": {"enabled": refs("queue-sort-plugin", "bind-plugin", S1), "disabled": refs("*")}},
        {"queueSort": ["queue-sort-plugin"], "preScore": [S1], "score": [S1], "bind": ["bind-plugin"]},
        {S1: 1},
    ),
    (
        "disable and enable MultiPoint plugin by name",
        {"multiPoint": {"enabled": refs("bind-plugin", "queue-sort-plugin", S1), "disabled": refs(S1)}},
        {"queueSort": ["queue-sort-plugin"], "preScore": [S1], "score": [S1], "bind": ["bind-plugin"]},
        {S1: 1},
    ),
    (
        "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
        {"multiPoint": {"enabled": refs(T, S1)}, "score": {"enabled": refs((S1, 5), (S2, 5), (T, 3))}},
        {**EVERYWHERE_T, "preScore": [T, S1], "score": [S1, T, S2]},
        {S1: 5, T: 3, S2: 5},
    ),
]


@pytest.mark.parametrize(
    ("name", "plugins", "want", "weights"), EXPANSION_CASES, ids=[c[0] for c in EXPANSION_CASES]
)
def test_multipoint_expansion(name, plugins, want, weights):
    cfg = load_config({"profiles": [{"plugins": plugins}]}, EXPANSION_REGISTRY)
    (p,) = cfg.profiles
    got = {pt: list(p.plugins_at(pt)) for pt in EXTENSION_POINTS if p.plugins_at(pt)}
    assert got == {pt: names for pt, names in want.items() if names}
    assert dict(p.weights) == weights


def test_multipoint_plugin_enabled_twice_is_an_error():
    with pytest.raises(ConfigError, match=r"plugins\.multiPoint: plugin \"test-plugin\" already registered"):
        load_config({"profiles": [{"plugins": {"multiPoint": {"enabled": refs(T, T)}}}]}, EXPANSION_REGISTRY)


# ---------------------------------------------------------------------- weights
def test_weight_overflow_is_detected():
    refs_ = [PluginRef(name="a", weight=5), PluginRef(name="b", weight=5)]
    assert score_weights(refs_, lambda n: True, max_total=1000) == {"a": 5, "b": 5}
    with pytest.raises(ValueError, match="total score of Score plugins could overflow"):
        score_weights(refs_, lambda n: True, max_total=999)


def test_weight_zero_means_one_and_non_scorers_get_none():
    got = score_weights([PluginRef(name="a", weight=0), PluginRef(name="f")], lambda n: n == "a")
    assert got == {"a": 1}


# ---------------------------------------------------------------------- several profiles
def test_several_profiles_each_resolved():
    cfg = load_config(
        {
            "apiVersion": API,
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 30,
            "podInitialBackoffSeconds": 2,
            "podMaxBackoffSeconds": 20,
            "profiles": [
                {"schedulerName": "default-scheduler"},
                {
                    "schedulerName": "no-scoring",
                    "percentageOfNodesToScore": 70,
                    "plugins": {"preScore": {"disabled": refs("*")}, "score": {"disabled": refs("*")}},
                },
            ],
        },
        upstream_registry(),
    )
    a, b = cfg.profiles
    assert (a.scheduler_name, b.scheduler_name) == ("default-scheduler", "no-scoring")
    assert list(a.plugins_at("score")) == EXPANDED_DEFAULTS["score"]
    assert b.plugins_at("score") == () and b.plugins_at("preScore") == ()
    assert list(b.plugins_at("filter")) == EXPANDED_DEFAULTS["filter"]
    assert (
        cfg.percentage_of_nodes_to_score,
        a.percentage_of_nodes_to_score,
        b.percentage_of_nodes_to_score,
    ) == (
        30,
        None,
        70,
    )
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2.0, 20.0)
    assert cfg.profile("no-scoring") is b


def test_enabling_a_custom_plugin_and_disabling_a_default_one():
    registry = upstream_registry().merged([fake_plugin("Custom", "filter", "score")])
    (p,) = load_config(
        {
            "profiles": [
                {
                    "plugins": {
                        "filter": {"enabled": refs("Custom"), "disabled": refs("NodePorts")},
                        "score": {"enabled": refs(("Custom", 7)), "disabled": refs("ImageLocality")},
                    }
                }
            ]
        },
        registry,
    ).profiles
    assert list(p.plugins_at("filter")) == [n for n in EXPANDED_DEFAULTS["filter"] if n != "NodePorts"] + [
        "Custom"
    ]
    assert "NodePorts" in p.plugins_at("preFilter")
    assert list(p.plugins_at("score"))[-1] == "Custom" and "ImageLocality" not in p.plugins_at("score")
    assert p.weights["Custom"] == 7


def test_plugin_args_are_validated_with_kind_and_defaults():
    registry = in_tree_registry()
    cfg = load_config(
        {
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {
                                "apiVersion": API,
                                "kind": "NodeResourcesFitArgs",
                                "scoringStrategy": {"type": "MostAllocated"},
                            },
                        }
                    ]
                }
            ]
        },
        registry,
    )
    args = cfg.profiles[0].args["NodeResourcesFit"]
    assert args.model_dump(by_alias=True)["scoringStrategy"]["type"] == "MostAllocated"


# ---------------------------------------------------------------------- errors: one line naming the field
def one_profile(**profile: Any) -> dict[str, Any]:
    return {"profiles": [profile]}


ERROR_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("wrong apiVersion", {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "<t>: apiVersion: expected"),
    ("wrong kind", {"kind": "Policy"}, "<t>: kind: expected KubeSchedulerConfiguration"),
    (
        "unknown top-level field",
        {"percentageOfNodeToScore": 10},
        "<t>: percentageOfNodeToScore: unknown field",
    ),
    (
        "wrong type",
        {"podMaxBackoffSeconds": "10"},
        "<t>: podMaxBackoffSeconds: Input should be a valid integer",
    ),
    ("parallelism", {"parallelism": 0}, "<t>: parallelism: 0 should be an integer value greater than zero"),
    (
        "percentage above 100",
        {"percentageOfNodesToScore": 101},
        "<t>: percentageOfNodesToScore: 101 not in valid range [0-100]",
    ),
    (
        "profile percentage below 0",
        one_profile(percentageOfNodesToScore=-1),
        "<t>: profiles[0].percentageOfNodesToScore: -1 not in valid range [0-100]",
    ),
    (
        "initial backoff 0",
        {"podInitialBackoffSeconds": 0},
        "<t>: podInitialBackoffSeconds: 0 must be greater than 0",
    ),
    (
        "max backoff below initial",
        {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4},
        "<t>: podMaxBackoffSeconds: 4 must be greater than or equal to podInitialBackoffSeconds",
    ),
    (
        "duplicate schedulerName",
        {"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
        '<t>: profiles[1].schedulerName: Duplicate value: "a" (also profiles[0].schedulerName)',
    ),
    (
        "missing schedulerName among several",
        {"profiles": [{"schedulerName": "a"}, {}]},
        "<t>: profiles[1].schedulerName: Required value",
    ),
    (
        "queueSort differs between profiles",
        {
            "profiles": [
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"queueSort": {"enabled": refs("PrioritySort")}}},
            ]
        },
        "<t>: profiles[1].plugins.queueSort: must be the same for all profiles",
    ),
    (
        "no queue sort",
        one_profile(
            plugins={"queueSort": {"disabled": refs("*")}, "multiPoint": {"disabled": refs("PrioritySort")}}
        ),
        "<t>: profiles[0].plugins.queueSort: exactly one queue sort plugin is required, got none",
    ),
    (
        "two queue sorts",
        one_profile(plugins={"queueSort": {"enabled": refs("PrioritySort", "OtherSort")}}),
        "<t>: profiles[0].plugins.queueSort: exactly one queue sort plugin is required, got PrioritySort, OtherSort",
    ),
    (
        "no bind plugin",
        one_profile(plugins={"multiPoint": {"disabled": refs("DefaultBinder")}}),
        "<t>: profiles[0].plugins.bind: at least one bind plugin is required",
    ),
    (
        "unknown plugin",
        one_profile(plugins={"score": {"enabled": refs("Nope")}}),
        '<t>: profiles[0].plugins.score.enabled[0]: unknown plugin "Nope" (known plugins: ',
    ),
    (
        "unknown MultiPoint plugin",
        one_profile(plugins={"multiPoint": {"enabled": refs("Nope")}}),
        '<t>: profiles[0].plugins.multiPoint.enabled[0]: unknown plugin "Nope"',
    ),
    (
        "plugin at a point it does not implement",
        one_profile(plugins={"filter": {"enabled": refs("PrioritySort")}}),
        '<t>: profiles[0].plugins.filter.enabled[0]: plugin "PrioritySort" does not extend filter',
    ),
    (
        "plugin enabled twice at one point",
        one_profile(plugins={"filter": {"enabled": refs("NodeName", "NodeName")}}),
        '<t>: profiles[0].plugins.filter.enabled[1]: plugin "NodeName" already registered',
    ),
    (
        "removed plugin",
        one_profile(plugins={"filter": {"enabled": refs("EBSLimits")}}),
        '<t>: profiles[0].plugins.filter.enabled[0]: "EBSLimits" was invalid in version',
    ),
    (
        "negative weight",
        one_profile(plugins={"score": {"enabled": refs(("TaintToleration", -1))}}),
        "<t>: profiles[0].plugins.score.enabled[0].weight: Input should be greater than or equal to 0",
    ),
    (
        "weight beyond int32",
        one_profile(plugins={"score": {"enabled": refs(("TaintToleration", 2**31))}}),
        "<t>: profiles[0].plugins.score.enabled[0].weight: Input should be less than or equal to 2147483647",
    ),
    (
        "misspelt field in a plugin set",
        one_profile(plugins={"score": {"enable": refs("TaintToleration")}}),
        "<t>: profiles[0].plugins.score.enable: unknown field",
    ),
    (
        "duplicate pluginConfig",
        one_profile(pluginConfig=[{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]),
        '<t>: profiles[0].pluginConfig[1]: duplicate config for plugin "NodeResourcesFit"',
    ),
    (
        "args kind of another plugin",
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"kind": "NodeAffinityArgs"}}]),
        '<t>: profiles[0].pluginConfig[0].args.kind: expected NodeResourcesFitArgs, got "NodeAffinityArgs"',
    ),
    (
        "args apiVersion",
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"apiVersion": "v1"}}]),
        '<t>: profiles[0].pluginConfig[0].args.apiVersion: expected kubescheduler.config.k8s.io/v1, got "v1"',
    ),
    (
        "unknown args field",
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"scoringStrategyy": {}}}]),
        "<t>: profiles[0].pluginConfig[0].args.scoringStrategyy: unknown field",
    ),
    (
        "bad args value",
        one_profile(
            pluginConfig=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Cheapest"}}}]
        ),
        "<t>: profiles[0].pluginConfig[0].args.scoringStrategy.type: Input should be",
    ),
    (
        "bad args of a plugin that is not enabled",
        one_profile(
            plugins={"multiPoint": {"disabled": refs("NodeResourcesFit")}},
            pluginConfig=[{"name": "NodeResourcesFit", "args": {"ignoredResources": 3}}],
        ),
        "<t>: profiles[0].pluginConfig[0].args.ignoredResources: Input should be a valid",
    ),
]


@pytest.mark.parametrize(("name", "doc", "message"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_invalid_configurations_fail_with_one_line_naming_the_field(name, doc, message):
    registry = in_tree_registry().merged([fake_plugin("OtherSort", "queueSort")])
    with pytest.raises(ConfigError) as err:
        load_config(doc, registry, source="<t>")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(message), text


class SortArgs(PluginArgs):
    reverse: bool = False


def test_queue_sort_args_must_match_across_profiles():
    sorter = type("ArgSort", (QueueSortPlugin,), {"NAME": "ArgSort", "Args": SortArgs})
    registry = in_tree_registry().merged([sorter])
    sort = {"queueSort": {"enabled": refs("ArgSort")}, "multiPoint": {"disabled": refs("PrioritySort")}}

    def profile(name: str, reverse: bool) -> dict[str, Any]:
        return {
            "schedulerName": name,
            "plugins": sort,
            "pluginConfig": [{"name": "ArgSort", "args": {"reverse": reverse}}],
        }

    cfg = load_config({"profiles": [profile("a", True), profile("b", True)]}, registry)
    assert [p.plugins_at("queueSort") for p in cfg.profiles] == [("ArgSort",), ("ArgSort",)]
    with pytest.raises(ConfigError) as err:
        load_config({"profiles": [profile("a", True), profile("b", False)]}, registry, source="<t>")
    assert (
        str(err.value) == "<t>: profiles[1].pluginConfig[0].args: queueSort must be the same for all profiles"
    )


def test_yaml_syntax_error_is_one_line(tmp_path):
    f = tmp_path / "sched.yaml"
    f.write_text("profiles:\n  - schedulerName: a\n   plugins: [\n")
    with pytest.raises(ConfigError) as err:
        load_config_file(f, in_tree_registry())
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{f}: not valid YAML: ") and "line 3" in text


def test_config_file_round_trip(tmp_path):
    f = tmp_path / "sched.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "apiVersion": API,
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "x", "plugins": {"score": {"disabled": refs("*")}}}],
            }
        )
    )
    cfg = load_config_file(f, in_tree_registry())
    assert cfg.profiles[0].scheduler_name == "x" and cfg.profiles[0].plugins_at("score") == ()
    assert cfg.source == str(f)


@pytest.mark.parametrize(
    ("doc", "warnings"),
    [
        pytest.param({}, [], id="defaults"),
        # Upstream's defaults written out are not a change and warn about nothing.
        pytest.param(
            {
                "parallelism": 16,
                "enableProfiling": True,
                "clientConnection": {"contentType": "application/vnd.kubernetes.protobuf"},
                "delayCacheUntilActive": False,
            },
            [],
            id="upstream defaults spelled out",
        ),
        pytest.param({"parallelism": 32}, ["<t>: parallelism: 32 is ignored"], id="parallelism"),
        pytest.param(
            {"clientConnection": {"contentType": "application/json"}},
            ["<t>: clientConnection.contentType: 'application/json' is ignored"],
            id="contentType",
        ),
        pytest.param(
            {"clientConnection": {"acceptContentTypes": "application/json"}},
            ["<t>: clientConnection.acceptContentTypes: 'application/json' is ignored"],
            id="acceptContentTypes",
        ),
        pytest.param(
            {"metricsBindAddress": "0.0.0.0:10251", "healthzBindAddress": "0.0.0.0:10251"},
            [
                "<t>: healthzBindAddress: '0.0.0.0:10251' is ignored",
                "<t>: metricsBindAddress: '0.0.0.0:10251' is ignored",
            ],
            id="bind addresses",
        ),
        pytest.param(
            {"enableProfiling": False, "enableContentionProfiling": False},
            ["<t>: enableProfiling: False is ignored", "<t>: enableContentionProfiling: False is ignored"],
            id="profiling",
        ),
        pytest.param(
            {"delayCacheUntilActive": True}, ["<t>: delayCacheUntilActive: True is ignored"], id="delayCache"
        ),
    ],
)
def test_ignored_upstream_fields_warn_when_set(doc, warnings, caplog):
    with caplog.at_level("WARNING", logger="harmonic.framework.config"):
        cfg = load_config(doc, in_tree_registry(), source="<t>")
    # Each warning names the field and value, then says why it has no effect.
    assert [w.split(" (")[0] for w in cfg.warnings] == warnings
    assert all(" (" in w for w in cfg.warnings)
    assert [r.getMessage() for r in caplog.records] == list(cfg.warnings)
    # Ignored means ignored: the resolved configuration is the default one.
    default = load_config({}, in_tree_registry(), source="<t>")
    assert cfg.profiles == default.profiles
