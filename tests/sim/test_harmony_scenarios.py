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


#: Since batch work advances at the truth's slowdown (issue 35), Jobs run longer under both profiles and
#: the scenarios' seed 11 misses the LC slowdown target: harmonic / default 0.653 on boutique-batch and
#: 0.687 on hotel-batch (over seeds 1-5: 0.461 [0.38, 0.54] and 0.498 [0.40, 0.60], docs/harmony.md).
#: Strict: the test says so when the profile meets the target again.
_LC_MISSED = pytest.mark.xfail(
    strict=True,
    reason="issue 35: LC slowdown above 0.6x the default's on seed 11 under the batch-aware truth",
)


@pytest.mark.parametrize(
    "name", [pytest.param("boutique-batch", marks=_LC_MISSED), pytest.param("hotel-batch", marks=_LC_MISSED)]
)
def test_harmonic_profile_meets_the_targets(tmp_path, name):
    scenario = ROOT / "examples" / "scenarios" / f"{name}.yaml"
    r = CliRunner().invoke(
        main, ["simulate", str(scenario), "--config", str(PROFILE), "--out", str(tmp_path), "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert list(doc["profiles"]) == ["default-scheduler", "harmonic"]
    assert_harmony_targets(doc["profiles"])
