"""kubectl's output conventions: ``-o json|yaml|wide`` with the data alone on stdout, ``--json`` kept as an
alias, and ``config show -o yaml`` a loadable KubeSchedulerConfiguration (kube-scheduler's
``--write-config-to``): checked by ``config check`` as the original is, and resolving to the same profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harmonic.cli import main

ROOT = Path(__file__).resolve().parents[1]
OWN_LEASE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {resourceName: harmonic, resourceNamespace: harmonic-system}
percentageOfNodesToScore: 40
profiles:
- schedulerName: harmonic
  plugins:
    score:
      enabled: [{name: NodeResourcesBalancedAllocation, weight: 3}]
      disabled: [{name: ImageLocality}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
- schedulerName: second
  percentageOfNodesToScore: 10
"""
CONFIGS = [
    None,
    "own-lease",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "harmonic" / "data" / "profiles").glob("*.yaml")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.yaml")),
]


def _invoke(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("config", CONFIGS)
def test_config_show_yaml_round_trips(config: str | None, tmp_path: Path) -> None:
    if config == "own-lease":
        (tmp_path / "own.yaml").write_text(OWN_LEASE)
        config = str(tmp_path / "own.yaml")
    original = [config] if config else []
    code, text, err = _invoke("config", "show", *original, "-o", "yaml")
    if code != 0:  # a file config show refuses is not this test's business
        pytest.skip(err)
    written = tmp_path / "written.yaml"
    written.write_text(text)
    doc = yaml.safe_load(text)
    assert (doc["apiVersion"], doc["kind"]) == (
        "kubescheduler.config.k8s.io/v1",
        "KubeSchedulerConfiguration",
    )
    # the same profiles, plugins, weights and args once loaded again, and the same document written back
    assert _invoke("config", "show", str(written)) == _invoke("config", "show", *original)
    assert _invoke("config", "show", str(written), "-o", "yaml")[1] == text
    # config check judges it as it judges the original, for every command
    if config is not None:
        for command in ("run", "extender", "simulate", "reschedule"):
            got = _invoke("config", "check", str(written), "--for", command)[0]
            assert got == _invoke("config", "check", config, "--for", command)[0], command


def test_config_show_yaml_of_a_config_of_its_own_passes_config_check_for_run(tmp_path: Path) -> None:
    (tmp_path / "own.yaml").write_text(OWN_LEASE)
    code, text, _ = _invoke("config", "show", str(tmp_path / "own.yaml"), "-o", "yaml")
    (tmp_path / "written.yaml").write_text(text)
    assert code == 0
    assert _invoke("config", "check", str(tmp_path / "written.yaml"))[0] == 0


def test_config_show_json_is_the_same_document() -> None:
    assert json.loads(_invoke("config", "show", "-o", "json")[1]) == yaml.safe_load(
        _invoke("config", "show", "-o", "yaml")[1]
    )


BOUTIQUE = str(ROOT / "harmonic" / "data" / "topologies" / "online-boutique.json")
RESCHEDULE = [
    "reschedule",
    "--policy",
    str(ROOT / "examples" / "rescheduler" / "make-room.yaml"),
    "--manifests",
    str(ROOT / "examples" / "rescheduler" / "fragmented-cluster.yaml"),
    "--once",
    "--dry-run",
    "--now",
    "1800000000",
]


@pytest.mark.parametrize(
    "argv, flag, loads",
    [
        (["graph", "--topology", BOUTIQUE], ["--json"], json.loads),
        (["graph", "--topology", BOUTIQUE], ["-o", "json"], json.loads),
        (["graph", "--topology", BOUTIQUE], ["-o", "yaml"], yaml.safe_load),
        (RESCHEDULE, ["--json"], json.loads),
        (RESCHEDULE, ["-o", "yaml"], yaml.safe_load),
    ],
)
def test_outputs_are_the_document_alone(argv: list[str], flag: list[str], loads: object) -> None:
    code, out, _ = _invoke(*argv, *flag)
    assert code == 0
    reference = json.loads(_invoke(*argv, "--json")[1])
    assert loads(out) == reference  # type: ignore[operator]


def test_json_and_another_output_conflict() -> None:
    code, _, err = _invoke("graph", "--topology", BOUTIQUE, "--json", "-o", "yaml")
    assert code == 2 and "give one" in err


def test_graph_wide_lists_every_edge_with_its_weight() -> None:
    doc = json.loads(_invoke("graph", "--topology", BOUTIQUE, "-o", "json")[1])
    code, out, _ = _invoke("graph", "--topology", BOUTIQUE, "-o", "wide", "--top", "1")
    lines = [line for line in out.splitlines() if " -> " in line]
    assert code == 0 and all("weight" in line for line in lines)
    assert len(lines) > 1 and len(lines) == len(doc["edges"])


@pytest.mark.parametrize("flag", [["--json"], ["-o", "json"], ["-o", "yaml"]])
def test_simulate_prints_only_the_metrics_on_stdout(flag: list[str], tmp_path: Path) -> None:
    code, out, err = _invoke(
        "simulate", "--topology", "online-boutique", "--out", str(tmp_path), "--no-progress", *flag
    )
    assert code == 0, err
    loads = yaml.safe_load if "yaml" in flag else json.loads
    assert loads(out) == json.loads((tmp_path / "metrics.json").read_text())
    assert "default-scheduler" in err  # the table went to stderr


@pytest.mark.parametrize(
    "argv, level",
    [
        ([], "WARNING"),
        (["-v"], "INFO"),
        (["-vv"], "DEBUG"),
        (["config", "show", "-v"], "INFO"),  # after the subcommand, as kubectl and descheduler take it
        (["config", "show", "-vv"], "DEBUG"),
        (["config", "show", "-v", "-v"], "DEBUG"),
        (["config", "show", "--verbose"], "INFO"),
        (["config", "show", "--v=2"], "INFO"),  # klog's -v=N
        (["config", "show", "-v=4"], "DEBUG"),
        (["config", "show", "--v=0"], "WARNING"),
    ],
)
def test_verbosity_anywhere(argv: list[str], level: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    seen: list[int] = []
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: seen.append(kw["level"]))
    args = argv if argv and argv[0] == "config" else [*argv, "config", "show"]
    code, _, err = _invoke(*args)
    assert code == 0, err
    assert seen == [getattr(logging, level)]
