"""examples/scenarios/load-aware-bandwidth.yaml: NodeBandwidth's filter keeps CommunicationAffinity from
packing declared traffic onto a node past its NIC, and the world's NICs stay unsaturated."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import yaml

from harmonic.api.pod import parse_pod
from harmonic.plugins.nodebandwidth import NETWORK_BANDWIDTH, pod_bandwidth

from ..helpers import run_worlds

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = ROOT / "examples" / "scenarios" / "load-aware-bandwidth.yaml"
PROFILES = ROOT / "examples" / "load-aware" / "bandwidth-profiles.yaml"
NIC = 12_000_000


def test_communication_affinity_does_not_pack_traffic_past_a_nic_with_node_bandwidth():
    sc = yaml.safe_load(SCENARIO.read_text()) | {"duration": "15m"}
    assert sc["cluster"]["nodePools"][0]["allocatable"][NETWORK_BANDWIDTH] == "12M"
    worlds = run_worlds(sc, SCENARIO.parent, (str(PROFILES),))
    declared: dict[str, dict[str, int]] = {}
    for name, world in worlds.items():
        per_node: dict[str, int] = defaultdict(int)
        for key, node in world.placement().items():
            demand = pod_bandwidth(parse_pod(world.cluster.pods[key]))
            assert not isinstance(demand, str)
            per_node[node] += int(demand[0])
        declared[name] = per_node
    metrics = {name: w.usage.summary() for name, w in worlds.items()}
    # CommunicationAffinity alone packs the chatty services together, past the NICs, and they saturate.
    assert max(declared["communication-affinity"].values()) > NIC
    assert metrics["communication-affinity"]["network_saturated_share"] > 0
    # With NodeBandwidth, every pod still runs, no node is declared past its NIC, and none saturates.
    for name in ("bandwidth", "communication-affinity-bandwidth"):
        assert not worlds[name].pending(), name
        assert max(declared[name].values()) <= NIC, name
        assert metrics[name]["network_saturated_share"] == 0, name


def test_the_bundled_harmonic_profile_keeps_declared_traffic_within_every_nic():
    """The bundled profile enables NodeBandwidth's filter (not its spreading score) beside
    CommunicationAffinity: the same scenario, and no node ends up declared past its NIC."""
    sc = yaml.safe_load(SCENARIO.read_text()) | {"duration": "15m"}
    worlds = run_worlds(
        sc, SCENARIO.parent, (str(ROOT / "harmonic" / "data" / "profiles" / "harmonic.yaml"),)
    )
    world = worlds["harmonic"]
    per_node: dict[str, int] = defaultdict(int)
    for key, node in world.placement().items():
        demand = pod_bandwidth(parse_pod(world.cluster.pods[key]))
        assert not isinstance(demand, str)
        per_node[node] += int(demand[0])
    assert not world.pending()
    assert max(per_node.values()) <= NIC
    assert world.usage.summary()["network_saturated_share"] == 0
