"""The ``harmonic config`` commands: one line of output, exit status 1 on any invalid file."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harmonic.cli import main

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
VALID = f"""\
{HEADER}leaderElection: {{resourceName: harmonic}}
profiles:
  - schedulerName: default-scheduler
  - schedulerName: packer
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
"""

INVALID = {
    "unknown plugin": HEADER
    + "profiles:\n  - plugins:\n      score:\n        enabled:\n          - name: Nope\n",
    "bad YAML": "profiles:\n  - schedulerName: a\n   plugins: [\n",
    "not a mapping": "- just\n- a list\n",
    "bad args": (
        HEADER + "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n        args:\n"
        "          scoringStrategy: {type: Cheapest}\n"
    ),
    "duplicate profile": HEADER + "profiles:\n  - schedulerName: a\n  - schedulerName: a\n",
    "backoff": HEADER + "podInitialBackoffSeconds: 3\npodMaxBackoffSeconds: 1\n",
}


def test_config_check_accepts_a_valid_file(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text(VALID)
    result = CliRunner().invoke(main, ["config", "check", str(f)])
    assert result.exit_code == 0
    assert result.stdout == f"{f}: valid, profiles: default-scheduler, packer\n"


@pytest.mark.parametrize("name", sorted(INVALID))
def test_config_check_prints_exactly_one_line_and_exits_1(tmp_path, name):
    f = tmp_path / "bad.yaml"
    f.write_text(INVALID[name])
    result = CliRunner().invoke(main, ["config", "check", str(f)])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {f}: "), result.stderr


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_config_check_unreadable_path_is_one_line(tmp_path, kind):
    path = tmp_path / "nope.yaml" if kind == "missing" else tmp_path
    result = CliRunner().invoke(main, ["config", "check", str(path)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: cannot read"), result.stderr
