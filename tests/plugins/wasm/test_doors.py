"""A guest configured in KubeSchedulerConfiguration works through all three doors without any wiring
of its own: ``harmonic run`` against an API server, the extender, and the simulator."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harmonic.cli import main
from harmonic.extender.engine import Extender
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.kubeshape import api_node, api_pod, extender_args, marshal
from tests.cluster.conftest import harmonic_run, run_config, wait_until
from tests.sim.helpers import deployment, pods, run_worlds, scenario


def _label_filter_profile(
    guests: dict[str, Path], config: str, name: str = "default-scheduler"
) -> dict[str, Any]:
    return {
        "schedulerName": name,
        "plugins": {"multiPoint": {"enabled": [{"name": "LabelFilter"}]}},
        "pluginConfig": [
            {"name": "LabelFilter", "args": {"guestURL": str(guests["labelfilter"]), "guestConfig": config}}
        ],
    }


def test_harmonic_run_schedules_with_a_guest(guests: dict[str, Path], tmp_path: Path) -> None:
    with ApiServerDouble(bookmark_interval=0.2) as api:
        config = run_config(api, tmp_path, [_label_filter_profile(guests, "tier=gold", "harmonic")])
        for n in ("a", "b", "c"):
            api.create("nodes", node(n).label("tier", "gold" if n == "b" else "silver").obj())
        for i in range(3):
            api.create("pods", pod(f"p{i}").scheduler("harmonic").obj())
        proc = harmonic_run(config, "wasm")
        try:
            placed = wait_until(lambda: len(api.pod_placement()) == 3 and api.pod_placement(), timeout=30)
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=20)
        finally:
            proc.kill()
    assert set(placed.values()) == {"b"}


def test_extender_filters_with_a_guest(guests: dict[str, Path]) -> None:
    registry = default_registry()
    cfg = load_config({"profiles": [_label_filter_profile(guests, "tier=gold")]}, registry, source="<test>")
    ext = Extender(cfg, registry)
    nodes = [api_node(node(n).label("tier", t).obj()) for n, t in (("a", "silver"), ("b", "gold"))]
    out = json.loads(ext.filter(marshal(extender_args(api_pod(pod("p").obj()), nodes=nodes))))
    assert [n["metadata"]["name"] for n in out["Nodes"]["items"]] == ["b"]
    assert out["FailedNodes"] == {"a": "node(s) didn't match the label filter"}


def test_simulator_runs_a_profile_with_a_guest(guests: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "wasm.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [_label_filter_profile(guests, "topology.kubernetes.io/zone=b", "wasm")],
            }
        )
    )
    worlds = run_worlds(
        scenario([{"type": "manifests", "objects": [deployment("web", 4)]}]), configs=(str(config),)
    )
    world = worlds["wasm"]
    zone_of = {
        n["metadata"]["name"]: n["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for n in world.cluster.nodes.values()
    }
    placed = [p["spec"].get("nodeName") for p in pods(world, "web").values()]
    assert len(placed) == 4 and all(placed)
    assert {zone_of[n] for n in placed} == {"b"}


def test_config_check_lists_guests_and_their_extension_points(
    guests: dict[str, Path], tmp_path: Path
) -> None:
    config = tmp_path / "sched.yaml"
    profile = _label_filter_profile(guests, "a=b")
    profile["plugins"]["multiPoint"]["enabled"].append({"name": "NodeNumber"})
    profile["pluginConfig"].append({"name": "NodeNumber", "args": {"guestURL": str(guests["nodenumber"])}})
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [profile],
            }
        )
    )
    r = CliRunner().invoke(main, ["config", "check", "--for", "extender", str(config)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"{config}: valid, profiles: default-scheduler"
    assert (
        f"  default-scheduler: LabelFilter: wasm guest {guests['labelfilter']}: filter (exports filter)"
        in lines
    )
    assert (
        f"  default-scheduler: NodeNumber: wasm guest {guests['nodenumber']}: preScore, score (exports prescore, score)"
        in lines
    )


def test_config_check_names_a_bad_guest(tmp_path: Path) -> None:
    config = tmp_path / "sched.yaml"
    bad = tmp_path / "bad.wasm"
    bad.write_bytes(b"\0asm\x01\0\0\0garbage")
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"pluginConfig": [{"name": "G", "args": {"guestURL": str(bad)}}]}],
            }
        )
    )
    r = CliRunner().invoke(main, ["config", "check", str(config)])
    assert r.exit_code == 1
    assert r.output.startswith(
        f"error: {config}: profiles[0].pluginConfig[0].args.guestURL: {bad}: not a valid WebAssembly module"
    )
