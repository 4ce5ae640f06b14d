"""Seed sweeps: seed specs, aggregation and paired comparison on hand-made results, and real sweeps of a
small scenario in separate processes (local pool, Dask LocalCluster, Ray when installed) that must
reproduce, seed for seed, what a single in-process run gives."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.plugins.registry import default_registry
from harmonic.sim.engine import Simulation
from harmonic.sim.metrics import WALL_CLOCK_KEYS
from harmonic.sim.report import metrics_document
from harmonic.sim.run import prepare
from harmonic.sim.sweep import (
    DaskExecutor,
    ExecutorUnavailable,
    LocalExecutor,
    RayExecutor,
    Result,
    SeedSpecError,
    Task,
    check_claim,
    executor,
    flatten,
    format_sweep_table,
    parse_seeds,
    prepare_sweep,
    run_task,
    sweep,
    sweep_document,
)

from .helpers import scenario

PACKER = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    "profiles:\n- schedulerName: packer\n  pluginConfig:\n  - name: NodeResourcesFit\n"
    "    args: {scoringStrategy: {type: MostAllocated}}\n"
)


# --------------------------------------------------------------------------- seed specs
@pytest.mark.parametrize(
    ("spec", "seeds"),
    [
        ("1-10", list(range(1, 11))),
        ("1,3,7", [1, 3, 7]),
        ("7,1-3", [1, 2, 3, 7]),
        (" 2 , 2 ", [2]),
        ("5-5", [5]),
        ("0", [0]),
    ],
)
def test_parse_seeds(spec, seeds):
    assert parse_seeds(spec) == seeds


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("a", "'a' is not a seed"),
        ("1-", "'1-' is not a seed"),
        ("", "'' is not a seed"),
        ("1,,2", "'' is not a seed"),
        ("9-3", "'9-3' is empty"),
    ],
)
def test_parse_seeds_errors_name_the_part(spec, message):
    with pytest.raises(SeedSpecError, match=message):
        parse_seeds(spec)


# --------------------------------------------------------------------------- aggregation
def test_flatten_keeps_numeric_leaves_under_dotted_keys():
    m = {
        "pods": 3,
        "share": 0.5,
        "flag": True,
        "none": None,
        "notes": ["x"],
        "name": "a",
        "time": {"p50": 1.0, "p99": 2},
        "traffic": {"shop": {"cross": 0.25, "topology": "sock-shop"}},
    }
    assert flatten(m) == {
        "pods": 3.0,
        "share": 0.5,
        "time.p50": 1.0,
        "time.p99": 2.0,
        "traffic.shop.cross": 0.25,
    }


def _result(seed: int, profile: str, metrics: dict[str, Any]) -> Result:
    return Result(
        seed,
        profile,
        {"scenario": {"name": "s", "source": "s.yaml", "seed": seed}, "profiles": {profile: metrics}},
    )


def _doc() -> dict[str, Any]:
    base = {1: 10.0, 2: 20.0, 3: 30.0}
    mine = {1: 4.0, 2: 6.0, 3: 15.0}
    results = []
    for s in (1, 2, 3):
        results.append(_result(s, "default-scheduler", {"share": base[s], "pending": 0, "t": {"p99": s}}))
        extra = {"reason": 5} if s == 2 else {}
        results.append(_result(s, "mine", {"share": mine[s], "pending": s, "t": {"p99": 2 * s}, **extra}))
    return sweep_document(reversed(results), ["default-scheduler", "mine"])


def test_summary_and_paired_comparison_by_hand():
    doc = _doc()
    assert doc["seeds"] == [1, 2, 3] and doc["baseline"] == "default-scheduler"
    assert list(doc["runs"]) == ["1", "2", "3"]
    assert list(doc["runs"]["2"]["profiles"]) == ["default-scheduler", "mine"]
    share = doc["summary"]["mine"]["share"]
    # values 4, 6, 15: mean 25/3, sample sd sqrt(((4-8.333)^2 + (6-8.333)^2 + (15-8.333)^2) / 2) = 5.859
    assert share["n"] == 3 and share["mean"] == pytest.approx(8.333333, abs=1e-6)
    assert share["stdev"] == pytest.approx(5.859465, abs=1e-6)
    assert share["ci95_half_width"] == pytest.approx(4.302653 * 5.859465 / 3**0.5, abs=1e-5)
    assert doc["summary"]["mine"]["t.p99"]["mean"] == 4
    # per-seed ratios 0.4, 0.3, 0.5: mean 0.4, sd 0.1, half-width 4.302653 * 0.1 / sqrt(3) = 0.248414
    ratio = doc["paired"]["mine"]["share"]["ratio"]
    assert ratio["mean"] == pytest.approx(0.4) and ratio["ci95_half_width"] == pytest.approx(
        0.248414, abs=1e-6
    )
    diff = doc["paired"]["mine"]["share"]["difference"]
    assert diff["mean"] == pytest.approx((-6 - 14 - 15) / 3)
    # the baseline's pending is 0 in every seed: no ratio, the difference only
    assert doc["paired"]["mine"]["pending"]["ratio"] is None
    assert doc["paired"]["mine"]["pending"]["difference"]["mean"] == 2
    # a metric present in one seed only: n = 1, no interval, no pairing
    assert doc["summary"]["mine"]["reason"] == {
        "n": 1,
        "mean": 5.0,
        "stdev": None,
        "ci95_half_width": None,
        "ci95_low": None,
        "ci95_high": None,
    }
    assert "reason" not in doc["paired"]["mine"]


def test_claims_hold_only_on_the_whole_interval():
    doc = _doc()
    # ratio interval 0.4 ± 0.248: within 0.65 but not within 0.6
    assert check_claim(doc, "mine", "share", 0.65)
    assert not check_claim(doc, "mine", "share", 0.6)
    assert check_claim(doc, "mine", "share", 0.1, ">=")
    assert not check_claim(doc, "mine", "pending", 10)  # undefined ratio
    assert check_claim(doc, "mine", "pending", 10, of="difference")
    assert not check_claim(doc, "mine", "reason", 100, of="value")  # one seed
    with pytest.raises(KeyError):
        check_claim(doc, "mine", "no_such_metric", 1)


def test_table_lists_each_metric_per_profile_with_the_paired_ratio():
    table = format_sweep_table(_doc())
    lines = table.splitlines()
    assert lines[0].split() == ["metric", "profile", "mean", "±", "95%", "CI", "n", "vs", "default-scheduler"]
    share = [line for line in lines if line.startswith("share")]
    assert len(share) == 1 and "default-scheduler" in share[0] and "20 ± 24.84" in share[0]
    mine = lines[lines.index(share[0]) + 1]
    assert mine.split()[:5] == ["mine", "8.333", "±", "14.56", "3"] and mine.endswith("x 0.4 ± 0.2484")
    assert any(line.split()[-1] == "(diff)" for line in lines)
    only = format_sweep_table(_doc(), ["t.*"]).splitlines()
    assert [line.split()[0] for line in only[2:] if not line.startswith(" ")] == ["t.p99"]


# --------------------------------------------------------------------------- real sweeps
def _scenario_file(tmp_path: Path) -> Path:
    sc = scenario(
        [
            {"type": "topology", "topology": "online-boutique", "userRate": 5, "replicas": 2},
            {
                "type": "arrivals",
                "name": "batch",
                "process": "poisson",
                "rate": 0.02,
                "end": 500,
                "duration": {"distribution": "exponential", "mean": 120},
                "template": {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"labels": {"app": "batch"}},
                    "spec": {
                        "parallelism": 2,
                        "completions": 2,
                        "template": {
                            "metadata": {"labels": {"app": "batch"}},
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "c",
                                        "image": "i",
                                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                    }
                                ],
                            },
                        },
                    },
                },
            },
        ],
        nodes=6,
        duration=600,
        seed=99,
    )
    path = tmp_path / "sc.yaml"
    path.write_text(yaml.safe_dump(sc))
    (tmp_path / "packer.yaml").write_text(PACKER)
    return path


def _stable(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if k not in WALL_CLOCK_KEYS}


def _in_process(path: Path, configs: tuple[str, ...], seed: int) -> dict[str, Any]:
    registry = default_registry()
    plan, runs = prepare(path, configs, registry, seed=seed)
    worlds = Simulation(plan, runs, registry).run()
    return {n: _stable(m) for n, m in metrics_document(plan, worlds)["profiles"].items()}


def _sweep_of(doc: dict[str, Any], seed: int) -> dict[str, Any]:
    return {n: _stable(m) for n, m in doc["runs"][str(seed)]["profiles"].items()}


def test_local_pool_reproduces_single_runs_seed_for_seed(tmp_path):
    path = _scenario_file(tmp_path)
    configs = (str(tmp_path / "packer.yaml"),)
    plans, runs = prepare_sweep(path, configs, default_registry(), [1, 2])
    seen: list[tuple[int, str]] = []
    doc = sweep(plans, runs, LocalExecutor(2), lambda r: seen.append((r.seed, r.profile)))
    assert sorted(seen) == [(1, "default-scheduler"), (1, "packer"), (2, "default-scheduler"), (2, "packer")]
    assert doc["profiles"] == ["default-scheduler", "packer"]
    for seed in (1, 2):
        assert doc["runs"][str(seed)]["scenario"]["seed"] == seed
        assert _sweep_of(doc, seed) == _in_process(path, configs, seed)
    # the seed matters: Poisson arrivals differ, so the two seeds' metrics differ
    assert _sweep_of(doc, 1) != _sweep_of(doc, 2)
    assert doc["summary"]["packer"]["pods_created"]["n"] == 2


def test_runs_in_one_process_do_not_leak_state(tmp_path):
    """What a pooled worker (Dask) does: several tasks one after another in the same process."""
    path = _scenario_file(tmp_path)
    plans, runs = prepare_sweep(path, (), default_registry(), [1, 2])
    first = run_task(Task(1, plans[1], runs[0]))
    run_task(Task(2, plans[2], runs[0]))
    again = run_task(Task(1, plans[1], runs[0]))
    assert _stable(first.document["profiles"]["default-scheduler"]) == _stable(
        again.document["profiles"]["default-scheduler"]
    )


def _fail_on_seed_1(task: Task) -> Result:
    if task.seed == 1:
        raise RuntimeError(f"run of seed {task.seed} failed")
    return run_task(task)


def test_a_failed_run_fails_the_sweep(tmp_path):
    plans, runs = prepare_sweep(_scenario_file(tmp_path), (), default_registry(), [1, 2])
    with pytest.raises(RuntimeError, match="run of seed 1 failed"):
        sweep(plans, runs, LocalExecutor(1), fn=_fail_on_seed_1)


@pytest.mark.parametrize(
    ("module", "make", "seed"),
    [("distributed", lambda: DaskExecutor(jobs=1), 3), ("ray", lambda: RayExecutor(jobs=1), 4)],
    ids=["dask-local-cluster", "ray-local"],
)
def test_cluster_executors_give_the_same_metrics(tmp_path, module, make, seed):
    pytest.importorskip(module)
    path = _scenario_file(tmp_path)
    plans, runs = prepare_sweep(path, (), default_registry(), [seed])
    doc = sweep(plans, runs, make())
    assert _sweep_of(doc, seed) == _in_process(path, (), seed)


@pytest.mark.parametrize(("name", "module"), [("dask", "distributed"), ("ray", "ray")])
def test_a_missing_extra_names_the_extra_to_install(monkeypatch, name, module):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == module else real(m, *a))
    with pytest.raises(ExecutorUnavailable, match=rf"pip install 'harmonic\[{name}\]'"):
        executor(name, 1)


def test_unknown_executor_is_an_error():
    with pytest.raises(ValueError, match="unknown executor 'spark'"):
        executor("spark")


def test_cli_sweep_writes_sweep_json_and_prints_the_table(tmp_path):
    path = _scenario_file(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        main,
        [
            "simulate",
            str(path),
            "--config",
            str(tmp_path / "packer.yaml"),
            "--seeds",
            "5,6",
            "--jobs",
            "2",
            "--out",
            str(out),
            "--no-progress",
            "--metric",
            "pods_*",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["seeds"] == [5, 6] and doc["profiles"] == ["default-scheduler", "packer"]
    assert doc["scenario"]["name"] == "test"
    assert set(doc["paired"]) == {"packer"}
    lines = r.stdout.splitlines()
    assert lines[0].startswith("metric") and "mean ± 95% CI" in lines[0]
    assert {line.split()[0] for line in lines[2:] if not line.startswith(" ")} <= {
        k for k in doc["summary"]["packer"] if k.startswith("pods_")
    }
    assert not (out / "metrics.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "x"], "error: --seeds: 'x' is not a seed"),
        (["--seeds", "1-2", "--seed", "3"], "error: --seed and --seeds: give one"),
        (["--jobs", "2"], "error: --jobs, --executor, --address and --metric apply to a sweep"),
        (["--seeds", "1", "--address", "tcp://127.0.0.1:1"], "error: --address applies to the dask and ray"),
    ],
)
def test_cli_sweep_errors_are_one_line(tmp_path, args, message):
    path = _scenario_file(tmp_path)
    r = CliRunner().invoke(main, ["simulate", str(path), "--out", str(tmp_path / "o"), *args])
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines()[-1].startswith(message), r.stderr


def test_with_routing_reroutes_every_application_and_nothing_else() -> None:
    from harmonic.sim.sweep import prepare_sweep, with_routing

    plans, _ = prepare_sweep(None, [], default_registry(), [1, 2])
    assert {t.routing for p in plans.values() for t in p.topologies} == {"preferZone"}
    random = with_routing(plans, "random")
    assert {t.routing for p in random.values() for t in p.topologies} == {"random"}
    assert [p.seed for p in random.values()] == [1, 2] and random[1].nodes == plans[1].nodes
    assert with_routing(plans, None) == plans


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("scenario", "/nowhere.yaml: cannot read scenario"),
        ("seeds", "'x' is not a seed"),
    ],
)
def test_input_errors_are_one_line_and_exit_1(
    error: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from harmonic.sim.sweep import exit_on_input_errors, parse_seeds, prepare_sweep

    def bad() -> int:
        if error == "scenario":
            prepare_sweep("/nowhere.yaml", [], default_registry(), [1])
        else:
            parse_seeds("x")
        return 0

    assert exit_on_input_errors(bad) == 1
    assert message in capsys.readouterr().err
