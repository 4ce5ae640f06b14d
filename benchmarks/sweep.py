"""Seed-sweep cost: time `harmonic simulate --seeds` of a scenario (default: the bundled one).

    python benchmarks/sweep.py                          # bundled scenario, seeds 1-10, --jobs 2
    python benchmarks/sweep.py --scenario examples/scenarios/boutique-batch.yaml --seeds 1-5 --jobs 1

Prints the number of runs, the wall seconds of the whole sweep, the CPU seconds of the parent and of
all worker processes (on a shared machine wall time is distorted by other load; CPU time is not), the
slowest run's own wall seconds, and the cross-node traffic share per profile (mean ± 95% CI). With
--json the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from harmonic.plugins.registry import default_registry
from harmonic.sim.sweep import LocalExecutor, parse_seeds, prepare_sweep, sweep


def _cpu_seconds(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=None, help="Scenario file (default: the bundled scenario).")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    seeds = parse_seeds(args.seeds)
    wall0 = time.perf_counter()
    self0, child0 = _cpu_seconds(resource.RUSAGE_SELF), _cpu_seconds(resource.RUSAGE_CHILDREN)
    plans, runs = prepare_sweep(args.scenario, (), default_registry(), seeds)
    doc = sweep(plans, runs, LocalExecutor(args.jobs))
    wall = time.perf_counter() - wall0
    parent_cpu = _cpu_seconds(resource.RUSAGE_SELF) - self0
    workers_cpu = _cpu_seconds(resource.RUSAGE_CHILDREN) - child0
    slowest = max(m["wall_seconds"] for d in doc["runs"].values() for m in d["profiles"].values())
    share = {
        p: (s["cross_node_traffic_share"]["mean"], s["cross_node_traffic_share"]["ci95_half_width"])
        for p, s in doc["summary"].items()
        if "cross_node_traffic_share" in s
    }
    print(
        f"scenario {doc['scenario']['name']}: {len(seeds)} seeds x {len(runs)} profiles, --jobs {args.jobs}"
    )
    print(f"  sweep wall seconds:        {wall:.1f}")
    print(f"  parent CPU seconds:        {parent_cpu:.1f}")
    print(f"  worker CPU seconds (sum):  {workers_cpu:.1f}")
    print(f"  slowest run wall seconds:  {slowest:.1f}")
    for p, (mean, hw) in share.items():
        print(f"  cross-node share {p}: {mean:.4f} ± {hw if hw is None else round(hw, 4)}")
    if args.json:
        print(
            json.dumps(
                {
                    "runs": len(seeds) * len(runs),
                    "jobs": args.jobs,
                    "wall_seconds": round(wall, 2),
                    "parent_cpu_seconds": round(parent_cpu, 2),
                    "worker_cpu_seconds": round(workers_cpu, 2),
                    "slowest_run_wall_seconds": slowest,
                }
            )
        )


if __name__ == "__main__":
    main()
