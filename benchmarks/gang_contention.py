"""Gang contention: Harmonic's `batch` profile beside scheduler-plugins' semantics (the same plugins
with gangGuard: false), on the same gangs and quotas (harmonic.sim.gangs).

    python benchmarks/gang_contention.py                 # 16 nodes x 16 cpu, gangs of 4..64, 3x the cluster
    python benchmarks/gang_contention.py --nodes 32 --load 3 --seed 2 --json

Prints, per profile, the gangs and quota metrics (virtual time: seconds of the simulated cluster) and
the CPU seconds the run took; with --json the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from importlib.resources import files
from typing import Any

import yaml

from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.sim.gangs import GangScenario, run_gangs


def profiles() -> dict[str, Any]:
    raw = yaml.safe_load((files("harmonic.data") / "profiles" / "batch.yaml").read_text())
    registry = default_registry()
    out = {"batch": load_config(raw, registry, source="batch.yaml")}
    prof = raw["profiles"][0]
    base = {**prof, "schedulerName": "scheduler-plugins"}
    base["pluginConfig"] = [
        {**pc, "args": {**pc["args"], "gangGuard": False}} if pc["name"] == "Coscheduling" else pc
        for pc in prof["pluginConfig"]
    ]
    out["scheduler-plugins"] = load_config({**raw, "profiles": [base]}, registry, source="baseline")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--node-cpu", type=int, default=16)
    ap.add_argument("--load", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-quotas", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    sc = GangScenario(
        nodes=args.nodes, node_cpu=args.node_cpu, load=args.load, seed=args.seed, quotas=not args.no_quotas
    )
    results: dict[str, Any] = {}
    for name, cfg in profiles().items():
        t0 = time.process_time()
        report = run_gangs(sc, cfg, default_registry())
        results[name] = {**report.as_dict(), "cpu_seconds": round(time.process_time() - t0, 2)}
        print(f"{name}:")
        for section in ("gangs", "quota"):
            print(f"  {section}: " + ", ".join(f"{k}={v}" for k, v in results[name][section].items()))
        print(f"  cpu_seconds={results[name]['cpu_seconds']}")
    if args.json:
        print(json.dumps({"scenario": repr(sc), "profiles": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
