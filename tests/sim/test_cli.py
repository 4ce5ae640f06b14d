"""`harmonic simulate`: the bundled scenario with no arguments, a user scenario with --config and
--topology, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


def _small(tmp_path: Path) -> list[str]:
    """A scenario of seconds under one profile besides the default."""
    sc = tmp_path / "s.yaml"
    sc.write_text(yaml.safe_dump(scenario([objects(deployment("web", 3))], duration=600)))
    return ["simulate", str(sc), "--config", str(ROOT / "harmonic/data/profiles/bin-packing.yaml")]


def test_out_that_is_a_file_is_refused_before_the_run(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    r = CliRunner().invoke(main, [*_small(tmp_path), "--out", str(taken), "--no-progress"])
    assert r.exit_code == 1
    assert r.stderr.strip() == f"error: --out {taken}: exists and is not a folder"
    assert r.stdout == "" and taken.read_text() == "not a folder"


def test_out_that_cannot_be_created_is_refused_before_the_run(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    r = CliRunner().invoke(main, [*_small(tmp_path), "--out", str(taken / "report"), "--no-progress"])
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: --out {taken / 'report'}: cannot write there: ")
    assert r.stdout == ""


def test_a_report_that_fails_to_write_still_prints_the_table(tmp_path, monkeypatch):
    """The folder passed the check but the disk fills (or it turns read-only) during the run."""

    def full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("harmonic.sim.run.write_report", full)
    r = CliRunner().invoke(main, [*_small(tmp_path), "--out", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 1
    assert r.stdout.splitlines()[0].split()[1:] == ["default-scheduler", "bin-packing"]
    assert f"error: --out {tmp_path / 'o'}: cannot write the report: No space left on device" in r.stderr


def test_a_sweep_to_a_file_is_refused_before_the_runs(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    r = CliRunner().invoke(
        main, [*_small(tmp_path), "--seeds", "1-2", "--jobs", "1", "--out", str(taken), "--no-progress"]
    )
    assert r.exit_code == 1
    assert r.stderr.strip() == f"error: --out {taken}: exists and is not a folder"


@pytest.mark.parametrize("command", ["simulate", "graph"])
@pytest.mark.parametrize("rate", ["1e15", "inf", "nan", "-1"])
def test_user_rate_out_of_bounds_is_a_usage_error(tmp_path, command, rate):
    """1e15 used to log 11,853 overflow tracebacks and leave pods pending; inf and nan a pydantic one."""
    r = CliRunner().invoke(
        main,
        [command, "--topology", "online-boutique", "--user-rate", rate, "--out", str(tmp_path)][
            : 5 if command == "graph" else 7
        ],
    )
    assert r.exit_code == 2, r.output
    assert "Invalid value for '--user-rate'" in r.stderr and "user actions per second" in r.stderr
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_the_largest_user_rate_simulates_without_an_error(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text(
        yaml.safe_dump(
            scenario(
                [{"type": "topology", "topology": "online-boutique", "userRate": 1e6}],
                duration=600,
                usage={"default": {"cpu": 0.5}},
            )
        )
    )
    r = CliRunner().invoke(
        main,
        [
            "simulate",
            str(sc),
            "--config",
            str(ROOT / "harmonic/data/profiles/bin-packing.yaml"),
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "error" not in r.stderr.lower()


def test_a_declared_bandwidth_past_the_bound_names_the_user_rate(tmp_path):
    topo = tmp_path / "t.json"
    topo.write_text(
        json.dumps(
            {
                "name": "t",
                "services": [{"name": "a"}, {"name": "b"}],
                "edges": [{"src": "a", "dst": "b", "weight": 1e6, "bytes": 1e9}],
            }
        )
    )
    sc = tmp_path / "s.yaml"
    sc.write_text(
        yaml.safe_dump(
            scenario(
                [{"type": "topology", "topology": str(topo), "userRate": 1e6}],
                duration=600,
                usage={"default": {"cpu": 0.5}},
            )
        )
    )
    r = CliRunner().invoke(main, ["simulate", str(sc), "--out", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: {sc}: workloads[0].userRate: 1e+06 user actions/s make a declare "), (
        r.stderr
    )
