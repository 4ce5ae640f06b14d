"""``harmonic reschedule --once --dry-run``: the plan as a table and as JSON; bad policies name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harmonic.cli import main

EXAMPLES = Path(__file__).parents[2] / "examples" / "rescheduler"
ARGS = [
    "reschedule",
    "--once",
    "--dry-run",
    "--manifests",
    str(EXAMPLES / "fragmented-cluster.yaml"),
    "--now",
    "1800000000",
]


def test_dry_run_prints_the_plan_and_changes_nothing():
    before = (EXAMPLES / "fragmented-cluster.yaml").read_text()
    r = CliRunner().invoke(main, [*ARGS, "--policy", str(EXAMPLES / "make-room.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert len(out["evictions"]) == 1
    e = out["evictions"][0]
    assert e["from"] != e["to"] and e["plugin"] == "MakeRoomForPending"
    assert out["nominations"] == [
        {"pod": "ml/train", "node": e["from"], "plan": "MakeRoomForPending/ml/train"}
    ]
    assert out["budgetViolations"] == 0
    assert (EXAMPLES / "fragmented-cluster.yaml").read_text() == before
    table = CliRunner().invoke(main, [*ARGS, "--policy", str(EXAMPLES / "make-room.yaml")])
    assert table.output.splitlines()[0].split() == ["POD", "FROM", "TO", "WHY", "GAIN"]
    assert "nominate ml/train" in table.output


def test_descheduler_policy_example_runs():
    r = CliRunner().invoke(main, [*ARGS, "--policy", str(EXAMPLES / "low-node-utilization.yaml")])
    assert r.exit_code == 0, r.output


def test_improve_harmony_example_runs_with_the_bundled_profile():
    profiles = Path(__file__).parents[2] / "harmonic" / "data" / "profiles" / "harmonic.yaml"
    r = CliRunner().invoke(
        main,
        [
            *ARGS,
            "--policy",
            str(EXAMPLES / "improve-harmony.yaml"),
            "--config",
            str(profiles),
            "--profile",
            "harmonic",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["budgetViolations"] == 0


def test_bad_policy_is_one_line_naming_the_field(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: x\n  plugins:\n    balance:\n      enabled: [Nope]\n"
    )
    r = CliRunner().invoke(main, [*ARGS, "--policy", str(bad)])
    assert r.exit_code == 1
    assert "profiles[0].plugins.balance.enabled[0]: plugin 'Nope' is not registered" in r.output


@pytest.mark.parametrize(
    "flags",
    [
        ["--policy", str(EXAMPLES / "make-room.yaml"), "--once", "--dry-run"],
        # descheduler's names: --policy-config-file, and --descheduling-interval 0 (its default) is one cycle
        ["--policy-config-file", str(EXAMPLES / "make-room.yaml"), "--descheduling-interval=0", "--dry-run"],
        [
            "--policy-config-file",
            str(EXAMPLES / "make-room.yaml"),
            "--descheduling-interval",
            "0s",
            "--dry-run",
            "-v",
        ],
    ],
)
def test_descheduler_flags_are_aliases(flags: list[str]) -> None:
    reference = CliRunner().invoke(main, [*ARGS, "--policy", str(EXAMPLES / "make-room.yaml"), "--json"])
    got = CliRunner().invoke(main, [*[a for a in ARGS if a not in ("--once", "--dry-run")], *flags, "--json"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout) == json.loads(reference.stdout)


@pytest.mark.parametrize("flags, evicted", [([], []), (["--no-churn-check"], ["default/a"])])
def test_no_churn_check_gives_descheduler_s_evictions(
    tmp_path: Path, flags: list[str], evicted: list[str]
) -> None:
    # both nodes carry a taint the pod does not tolerate: descheduler evicts it, Harmonic's churn check
    # keeps it (its replacement would fit nowhere)
    from tests.rescheduler.test_plugins import N, P

    objs = [N("n1", taint=("dedicated", "gpu")), N("n2", taint=("dedicated", "gpu")), P("a", "n1")]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objs))
    pol = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [
            {"name": "p", "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}}
        ],
    }
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(pol))
    argv = [
        "reschedule",
        "--policy",
        str(tmp_path / "policy.yaml"),
        "--manifests",
        str(tmp_path / "cluster.yaml"),
    ]
    r = CliRunner().invoke(main, [*argv, "--once", "--dry-run", "--now", "1800000000", "-o", "json", *flags])
    assert r.exit_code == 0, r.output
    assert [e["pod"] for e in json.loads(r.stdout)["evictions"]] == evicted


@pytest.mark.parametrize(
    "plugin, objs, says",
    [
        (
            "LowNodeUtilization",
            [("n1", None), ("n2", None), ("a", "n1")],
            "plan LowNodeUtilization: nothing to do: All nodes are underutilized, nothing to do here",
        ),
        (
            "RemovePodsViolatingNodeTaints",
            [("n1", ("dedicated", "gpu")), ("n2", ("dedicated", "gpu")), ("a", "n1")],
            "kept default/a (RemovePodsViolatingNodeTaints): no churn: the replacement would fit on no node",
        ),
    ],
)
def test_a_dry_run_that_evicts_nothing_says_why(tmp_path: Path, plugin: str, objs: list, says: str) -> None:
    from tests.rescheduler.test_plugins import N, P

    manifests = []
    for name, extra in objs:
        if name.startswith("n"):
            manifests.append(N(name, taint=extra) if extra else N(name))
        else:
            manifests.append(P(name, extra))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(manifests))
    config = (
        [{"name": plugin, "args": {"thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 50}}}]
        if plugin == "LowNodeUtilization"
        else []
    )
    point = "balance" if plugin == "LowNodeUtilization" else "deschedule"
    pol = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{"name": "p", "pluginConfig": config, "plugins": {point: {"enabled": [plugin]}}}],
    }
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(pol))
    argv = [
        "reschedule",
        "--policy",
        str(tmp_path / "policy.yaml"),
        "--manifests",
        str(tmp_path / "cluster.yaml"),
    ]
    r = CliRunner().invoke(main, [*argv, "--once", "--dry-run", "--now", "1800000000"])
    assert r.exit_code == 0, r.output
    assert says in r.stdout.splitlines()
