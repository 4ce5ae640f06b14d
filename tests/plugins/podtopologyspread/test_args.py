"""PodTopologySpreadArgs: defaulting and validation, as upstream's ValidatePodTopologySpreadArgs."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.framework.config import ConfigError, load_config
from harmonic.plugins.podtopologyspread.args import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    PodTopologySpreadArgs,
)
from harmonic.plugins.registry import default_registry


def _config(args: dict[str, Any] | None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if args is not None:
        profile["pluginConfig"] = [{"name": "PodTopologySpread", "args": args}]
    return {"profiles": [profile]}


def _args(args: dict[str, Any] | None) -> PodTopologySpreadArgs:
    cfg = load_config(_config(args), default_registry(), source="sched.yaml")
    got = cfg.profiles[0].args["PodTopologySpread"]
    assert isinstance(got, PodTopologySpreadArgs)
    return got


def test_default_profile_enables_plugin_with_weight_two_and_system_defaulting() -> None:
    cfg = load_config(None, default_registry())
    prof = cfg.profiles[0]
    for point in ("preFilter", "filter", "preScore", "score"):
        assert "PodTopologySpread" in prof.plugins_at(point)
    assert prof.weights["PodTopologySpread"] == 2
    args = prof.args["PodTopologySpread"]
    assert isinstance(args, PodTopologySpreadArgs)
    assert args.defaulting_type == "System"
    assert args.effective_constraints == SYSTEM_DEFAULT_CONSTRAINTS


def test_system_default_constraints_are_upstreams() -> None:
    got = [(c.max_skew, c.topology_key, c.when_unsatisfiable) for c in SYSTEM_DEFAULT_CONSTRAINTS]
    assert got == [
        (3, "kubernetes.io/hostname", "ScheduleAnyway"),
        (5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
    ]


@pytest.mark.parametrize(
    ("args", "defaulting", "keys"),
    [
        (None, "System", ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
        ({}, "System", ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
        ({"defaultingType": "List"}, "List", []),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
                    {
                        "maxSkew": 2,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "minDomains": 3,
                    },
                ],
            },
            "List",
            ["rack", "zone"],
        ),
    ],
)
def test_defaulting(args: dict[str, Any] | None, defaulting: str, keys: list[str]) -> None:
    got = _args(args)
    assert got.defaulting_type == defaulting
    assert [c.topology_key for c in got.effective_constraints] == keys


_C = {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "maxSkew": -1}]},
            "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "maxSkew": 0}]},
            "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "topologyKey": ""}]},
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "topologyKey": "-bad-"}]},
            "defaultConstraints[0].topologyKey: Invalid value: '-bad-': name part must consist of",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "topologyKey": "Example.com/zone"}]},
            "defaultConstraints[0].topologyKey: Invalid value: 'Example.com/zone': prefix part must be",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "whenUnsatisfiable": ""}]},
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "whenUnsatisfiable": "Sometimes"}]},
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"',
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "labelSelector": {}}]},
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
            "as they deduced for each pod",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [_C, {**_C, "maxSkew": 2}]},
            'defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"',
        ),
        (
            {"defaultingType": "Random"},
            'defaultingType: Unsupported value: "Random": supported values: "System", "List"',
        ),
        (
            {"defaultConstraints": [_C]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "maxSkewz": 1}]},
            "defaultConstraints[0].maxSkewz: unknown field",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**_C, "maxSkew": "one"}]},
            "defaultConstraints[0].maxSkew: Input should be a valid integer",
        ),
    ],
)
def test_validation_errors_name_the_field(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _args(args)
    assert "sched.yaml: profiles[0].pluginConfig[0].args" in str(err.value)
    assert message in str(err.value)


def test_all_errors_are_reported_together() -> None:
    with pytest.raises(ConfigError) as err:
        _args({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": ""}]})
    text = str(err.value)
    assert "maxSkew: Invalid value: 0" in text
    assert "topologyKey: Required value" in text
    assert "whenUnsatisfiable: Required value" in text


def test_valid_list_args_keep_every_field() -> None:
    got = _args(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 2,
                    "topologyKey": "example.com/rack",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": 2,
                    "nodeAffinityPolicy": "Ignore",
                    "nodeTaintsPolicy": "Honor",
                }
            ],
        }
    )
    assert got.default_constraints[0].manifest() == {
        "maxSkew": 2,
        "topologyKey": "example.com/rack",
        "whenUnsatisfiable": "DoNotSchedule",
        "minDomains": 2,
        "nodeAffinityPolicy": "Ignore",
        "nodeTaintsPolicy": "Honor",
    }
