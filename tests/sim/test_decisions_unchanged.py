"""Performance work must not change a single scheduling decision.

The fixtures hold every bind (virtual time, pod, node, in order) of every bundled profile on the bundled
scenario and on a 1,000-node scenario, recorded by ``scripts/record_sim_decisions.py`` with the simulator
as it was before the cluster-scale work (issue 13). A run today must reproduce them exactly. The
1,000-node scenario packs DaemonSet pods onto full nodes under bin-packing, so it exercises replayed
failures (``harmonic.scheduler.repeat``); the test checks that they happened.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from harmonic.plugins.registry import default_registry
from harmonic.sim.placements import record_placements
from harmonic.sim.run import BUNDLED_SCENARIO

FIXTURES = Path(__file__).parent / "fixtures"


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress((FIXTURES / f"placements-{name}.json.gz").read_bytes()))
    return doc


def _first_difference(want: list[list[Any]], got: list[list[Any]]) -> str:
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != g:
            return f"bind #{i}: recorded {w}, now {g}"
    return f"recorded {len(want)} binds, now {len(got)}"


@pytest.mark.parametrize("name", ["bundled", "large"])
def test_every_bind_is_the_recorded_one(name: str) -> None:
    fixture = _load(name)
    replayed: dict[str, int] = {}
    got = record_placements(fixture["scenario"], default_registry(), BUNDLED_SCENARIO.parent, replayed)
    want = fixture["placements"]
    # Profiles bundled after the recording (load-aware) have no "before" to compare with.
    assert set(want) <= set(got)
    for profile, binds in want.items():
        assert got[profile] == binds, f"{name}/{profile}: {_first_difference(binds, got[profile])}"
    if name == "large":
        # The case the optimisation is for did occur (else this test would prove nothing about it).
        assert replayed["bin-packing"] > 0
