"""A KubeSchedulerConfiguration, however mangled, loads into working profiles or fails with one
``ConfigError`` naming the file and field (hypothesis over a config that sets every section)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import given

from harmonic.extender.engine import Extender
from harmonic.framework.config import ConfigError, load_config, load_config_file
from harmonic.plugins.registry import default_registry
from tests.fuzzing import fuzz_settings, mutated

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = default_registry()

RICH: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "harmonic-scheduler.yaml").read_text())
RICH["profiles"].insert(0, {"schedulerName": "default-scheduler"})
RICH["percentageOfNodesToScore"] = 50
RICH["leaderElection"] = {"leaderElect": True, "leaseDuration": "15s", "resourceName": "harmonic"}
RICH["clientConnection"] = {"qps": 50, "burst": 100}
RICH["profiles"].append(
    {
        "schedulerName": "tuned",
        "percentageOfNodesToScore": 30,
        "plugins": {
            "score": {
                "enabled": [{"name": "NodeResourcesFit", "weight": 2}],
                "disabled": [{"name": "ImageLocality"}],
            }
        },
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 1}],
                        "requestedToCapacityRatio": {
                            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                        },
                    }
                },
            },
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
                    ],
                },
            },
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 1}},
            {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10}},
            {
                "name": "NodeAffinity",
                "args": {
                    "addedAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
                            ]
                        }
                    }
                },
            },
        ],
    }
)


def test_the_rich_config_is_valid():
    assert [p.scheduler_name for p in load_config(RICH, REGISTRY, "rich.yaml").profiles] == [
        "default-scheduler",
        "harmonic",
        "tuned",
    ]


@fuzz_settings(120)
@given(doc=mutated(RICH))
def test_fuzz_config_loads_into_frameworks_or_names_the_field(doc):
    try:
        config = load_config(doc, REGISTRY, source="rich.yaml")
    except ConfigError as e:
        assert str(e).startswith("rich.yaml"), e
        return
    Extender(config, REGISTRY)  # every profile's plugins are built from their args


@fuzz_settings(40)
@given(text=mutated(RICH).map(lambda d: yaml.safe_dump(d)[: len(yaml.safe_dump(d)) // 2]))
def test_fuzz_truncated_config_file(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text(text)
    try:
        load_config_file(path, REGISTRY)
    except ConfigError as e:
        assert str(e).startswith(str(path)), e
