"""How far any placement could bring request latency down: the p99 goal's ceiling, per scenario.

The harmony goals ask the `harmonic` profile for a user-request p99 at most 0.7 of the default profile's.
Placement changes p99 through the interference a service suffers (and the network hops, a fraction of a
millisecond each); the rest of a request's latency — service times, queueing at a service's load —
no placement removes. This runs each scenario twice over seeds: as written, and with the ground truth's
interference switched off (every class's sensitivity 0). Profiles read no truth, so placements are the
same in both; the second run's p99 is what each profile's placements would give were nobody slowed by
anybody. Per seed, it prints against the default profile's p99 as written (mean and 95% CI):

- `harmonic`: the profile's ratio as judged by benchmarks/harmony_claims.py;
- `no interference`, default placements: the floor — no placement can remove more than the
  interference, so a ratio near it is as low as p99 can go; a floor above 0.7 means the p99 goal cannot
  be met on that scenario by any scheduler;
- `no interference`, harmonic's placements: what is left of harmonic's tail once interference is gone
  (network hops and queueing).

    python benchmarks/harmony_ceiling.py                       # bundled scenario, seeds 1-10, --jobs 2
    python benchmarks/harmony_ceiling.py --routing preferZone --scenario examples/scenarios/hotel-batch.yaml
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harmonic.plugins.registry import default_registry
from harmonic.sim.profiles import BUNDLED_PROFILES_DIR
from harmonic.sim.run import BUNDLED_SCENARIO
from harmonic.sim.stats import mean_ci
from harmonic.sim.sweep import (
    LocalExecutor,
    exit_on_input_errors,
    parse_seeds,
    prepare_sweep,
    sweep,
    with_routing,
)
from harmonic.sim.truth.config import TRUTH_CLASSES, GroundTruth

PROFILES = BUNDLED_PROFILES_DIR / "harmonic.yaml"
BASE, MINE = "default-scheduler", "harmonic"
QUIET = {"cpu": 0.0, "memoryBandwidth": 0.0, "io": 0.0}


def without_interference(truth: GroundTruth) -> GroundTruth:
    """The same truth with every class's sensitivity 0: nobody is slowed by anybody."""
    doc = truth.model_dump(by_alias=True)
    doc["sensitivity"] = {cls: QUIET for cls in TRUTH_CLASSES}
    return GroundTruth.model_validate(doc)


def p99s(doc: Mapping[str, Any], profile: str) -> dict[int, dict[str, float]]:
    """seed -> application -> p99 (ms) of ``profile`` in a sweep document."""
    return {
        int(seed): {
            app: float(v["p99"]) for app, v in run["profiles"][profile]["user_request_latency_ms"].items()
        }
        for seed, run in doc["runs"].items()
        if profile in run["profiles"]
    }


def ratios(mine: Mapping[int, Mapping[str, float]], base: Mapping[int, Mapping[str, float]], app: str) -> str:
    values = [mine[s][app] / base[s][app] for s in sorted(set(mine) & set(base)) if base[s].get(app)]
    return "x " + mean_ci(values, n=True) if values else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--scenario", action="append", default=[], help="scenario file (repeatable; default: bundled)"
    )
    ap.add_argument(
        "--routing", choices=("random", "preferZone", "preferNode"), help="every application's routing"
    )
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    registry = default_registry()
    seeds = parse_seeds(args.seeds)
    for sc in args.scenario or [None]:
        plans, runs = prepare_sweep(sc, [PROFILES], registry, seeds)
        runs = [r for r in runs if r.name in (BASE, MINE)]
        plans = with_routing(plans, args.routing)
        quiet = {
            s: dataclasses.replace(p, ground_truth=without_interference(p.ground_truth))
            for s, p in plans.items()
        }
        written = sweep(plans, runs, LocalExecutor(args.jobs))
        calm = sweep(quiet, runs, LocalExecutor(args.jobs))
        base, mine = p99s(written, BASE), p99s(written, MINE)
        floor, floor_mine = p99s(calm, BASE), p99s(calm, MINE)
        name = Path(sc).stem if sc else BUNDLED_SCENARIO.stem
        apps = sorted({app for per in base.values() for app in per})
        print(
            f"\n{name}, seeds {args.seeds}, routing {args.routing or 'as written'}: p99 against the default as written"
        )
        if not apps:
            print("  no application: no request latency")
        for app in apps:
            print(f"  {app}")
            print(f"    harmonic:                               {ratios(mine, base, app)}")
            print(f"    no interference, default placements:    {ratios(floor, base, app)}")
            print(f"    no interference, harmonic's placements: {ratios(floor_mine, base, app)}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_on_input_errors(main))
