"""The harmonic profile against the default profile on the example scenarios beside the bundled one
(the bundled scenario is checked in test_cli): Online Boutique and DeathStarBench's hotel reservation,
each at four replicas per service beside batch Jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harmonic.cli import main

from .helpers import assert_harmony_targets

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "harmonic" / "data" / "profiles" / "harmonic.yaml"


@pytest.mark.parametrize("name", ["boutique-batch", "hotel-batch"])
def test_harmonic_profile_meets_the_targets(tmp_path, name):
    scenario = ROOT / "examples" / "scenarios" / f"{name}.yaml"
    r = CliRunner().invoke(
        main, ["simulate", str(scenario), "--config", str(PROFILE), "--out", str(tmp_path), "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert list(doc["profiles"]) == ["default-scheduler", "harmonic"]
    assert_harmony_targets(doc["profiles"])
