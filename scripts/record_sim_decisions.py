"""Record the simulator's placements into the fixtures ``tests/sim/test_decisions_unchanged.py`` compares
against: every bind of every bundled profile, in order, with its virtual time.

    python scripts/record_sim_decisions.py            # rewrite both fixtures
    python scripts/record_sim_decisions.py --only large
    python scripts/record_sim_decisions.py --profile batch   # re-record one profile, keep the others

Run it only when a change is *meant* to alter scheduling decisions (and say so in the commit): the
fixtures are the evidence that performance work left every decision as it was. The fixtures hold the
scenario document too, so the test does not depend on the benchmark's generator staying the same.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from simulate import daemonset, deployment, pod_spec  # noqa: E402

from harmonic.plugins.registry import default_registry  # noqa: E402
from harmonic.sim.placements import record_placements  # noqa: E402
from harmonic.sim.run import BUNDLED_SCENARIO  # noqa: E402

FIXTURES = ROOT / "tests" / "sim" / "fixtures"


def large_scenario() -> dict[str, Any]:
    """1,000 nodes in three zones for five virtual minutes: a Deployment whose pods fill 2-CPU halves of
    nodes, a DaemonSet created after it, short-lived pods arriving all along, a node failure and a
    drain. Under bin-packing the Deployment fills nodes before their DaemonSet pods are tried, and those
    are retried on every pod deletion: the retries issue 13 makes cheap."""
    return {
        "apiVersion": "harmonic.dev/v1alpha1",
        "kind": "Scenario",
        "name": "placements-1000-nodes",
        "seed": 3,
        "duration": 300,
        "sampleInterval": 60,
        "cluster": {
            "nodePools": [
                {
                    "name": "node",
                    "count": 1000,
                    "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                    "zones": ["zone-a", "zone-b", "zone-c"],
                    "region": "region-1",
                }
            ]
        },
        "workloads": [
            {
                "type": "manifests",
                "objects": [
                    deployment("fill", 200, pod_spec("2", "4Gi")),
                    daemonset("agent", pod_spec("100m", "128Mi")),
                ],
            },
            {
                "type": "arrivals",
                "name": "task",
                "rate": 2,
                "count": 300,
                "duration": {"distribution": "uniform", "min": 5, "max": 60},
                "template": {"apiVersion": "v1", "kind": "Pod", "spec": pod_spec("250m", "512Mi", "Never")},
            },
        ],
        "events": [
            {"type": "nodeFailed", "at": 60, "node": "node-7"},
            {"type": "nodeDrained", "at": 120, "node": "node-8", "force": True},
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("bundled", "large"))
    ap.add_argument(
        "--profile",
        action="append",
        default=[],
        help="replace only this profile's binds in the existing fixtures (repeatable); the others stay as recorded",
    )
    args = ap.parse_args()
    registry = default_registry()
    cases: dict[str, Any] = {
        "bundled": lambda: json.loads(json.dumps(_yaml(BUNDLED_SCENARIO))),
        "large": large_scenario,
    }
    for name, make in cases.items():
        if args.only and name != args.only:
            continue
        out = FIXTURES / f"placements-{name}.json.gz"
        kept: dict[str, Any] = {}
        if args.profile:
            kept = json.loads(gzip.decompress(out.read_bytes()))
        doc = kept.get("scenario") or make()
        t0 = time.perf_counter()
        placements = record_placements(doc, registry, base=BUNDLED_SCENARIO.parent)
        if args.profile:
            placements = {p: placements[p] if p in args.profile else v for p, v in kept["placements"].items()}
        body = json.dumps({"scenario": doc, "placements": placements}, separators=(",", ":"))
        out.write_bytes(gzip.compress(body.encode(), mtime=0))
        counts = ", ".join(f"{p}: {len(v)}" for p, v in placements.items())
        print(f"{out.relative_to(ROOT)}: {counts} binds ({time.perf_counter() - t0:.0f} s)")
    return 0


def _yaml(path: Path) -> Any:
    import yaml

    return yaml.safe_load(path.read_text())


if __name__ == "__main__":
    sys.exit(main())
