"""`harmonic simulate`: the bundled scenario with no arguments, a user scenario with --config and
--topology, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from harmonic.cli import main

from .helpers import deployment, objects, scenario

ROOT = Path(__file__).resolve().parents[2]


def test_no_arguments_runs_the_bundled_scenario_under_every_bundled_profile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["simulate", "--no-progress"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].split()[1:] == ["default-scheduler", "batch", "bin-packing", "harmonic", "load-aware"]
    assert any(line.startswith("cross-zone traffic share") for line in lines)
    assert any(line.startswith("LC slowdown, truth (mean)") for line in lines)
    assert any(line.startswith("boutique request latency p99 (ms)") for line in lines)
    assert any(line.startswith("boutique request latency p99, M/M/c (ms)") for line in lines)
    assert any(line.startswith("batch slowdown, truth (mean)") for line in lines)
    doc = json.loads((tmp_path / "harmonic-report" / "metrics.json").read_text())
    assert doc["scenario"]["name"] == "bundled-multi-zone"
    assert list(doc["profiles"]) == ["default-scheduler", "batch", "bin-packing", "harmonic", "load-aware"]
    for m in doc["profiles"].values():
        assert m["pods_scheduled"] > 400 and m["cross_node_traffic_share"] is not None
        assert m["batch_slowdown_truth"]["mean"] > 0
    # The harmony targets on this scenario: tests/sim/test_harmony_scenarios.py.
    assert (tmp_path / "harmonic-report" / "report.html").stat().st_size > 1_000_000


def test_scenario_config_topology_and_out(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text(yaml.safe_dump(scenario([objects(deployment("web", 3))], duration=600)))
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: packer\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: MostAllocated}}\n"
    )
    topo = ROOT / "harmonic" / "data" / "topologies" / "online-boutique.json"
    out = tmp_path / "out"
    r = CliRunner().invoke(
        main,
        ["simulate", str(sc), "--config", str(cfg), "--topology", str(topo), "--out", str(out), "--json"],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "metrics.json").read_text())
    assert list(doc["profiles"]) == ["default-scheduler", "packer"]
    assert doc["scenario"]["topologies"] == ["online-boutique"]
    assert doc["profiles"]["packer"]["pods_scheduled"] == 3 + 12


def test_topology_alone_runs_on_the_bundled_cluster(tmp_path):
    r = CliRunner().invoke(
        main,
        [
            "simulate",
            "--topology",
            "online-boutique",
            "--user-rate",
            "5",
            "--out",
            str(tmp_path),
            "--no-progress",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "metrics.json").read_text())
    m = doc["profiles"]["default-scheduler"]
    assert m["pods_created"] == 12 and m["nodes"] == 17
    assert doc["scenario"]["topologies"] == ["online-boutique"]


def test_bad_scenario_is_one_error_line(tmp_path):
    sc = tmp_path / "bad.yaml"
    sc.write_text(yaml.safe_dump(scenario(events=[{"type": "nodeFailed", "at": 1, "node": "ghost"}])))
    r = CliRunner().invoke(main, ["simulate", str(sc), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1
    assert r.stderr.strip() == f"error: {sc}: events[0].node: no node 'ghost' exists at 1s"
    assert not (tmp_path / "o").exists()
