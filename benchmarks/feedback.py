"""The feedback loop's figures over seeds (docs/feedback.md, "Measured"): run (or read) seed sweeps of the
feedback scenarios and print, per scenario, mean ± 95% CI over the seeds of

- the learnt matrix's relative error against the truth, before and after (and the fall, per seed);
- the Spearman correlation of the learnt ranking of aggressors per victim with the truth's;
- the paired ratio learning / prior (per seed, then mean ± CI) of the true latency-critical slowdown
  and of the p99 user-request latency, for the bundled `harmonic` profile and for `harmonic-limit`
  (Dissonance's filter on);
- the jobs completed by the learning profile against its prior twin (what keeping antagonists away costs).

    python benchmarks/feedback.py                       # sweeps of the three scenarios, seeds 1-10, --jobs 2
    python benchmarks/feedback.py --from DIR            # read DIR/<scenario>/sweep.json instead

With --from the sweeps are the ones `harmonic simulate examples/feedback/<s>.yaml --config
harmonic/data/profiles/harmonic.yaml --config examples/feedback/harmonic-feedback.yaml --config
examples/feedback/harmonic-limit.yaml --config examples/feedback/harmonic-limit-feedback.yaml --seeds 1-10
--jobs 2 --out DIR/<s>` wrote.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harmonic.sim.stats import mean_ci

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("antagonist", "sensitive", "prior-right")
CONFIGS = (
    "harmonic/data/profiles/harmonic.yaml",
    "examples/feedback/harmonic-feedback.yaml",
    "examples/feedback/harmonic-limit.yaml",
    "examples/feedback/harmonic-limit-feedback.yaml",
)
PAIRS = (("harmonic-feedback", "harmonic"), ("harmonic-limit-feedback", "harmonic-limit"))


def _pm(values: list[float]) -> str:
    return mean_ci(values, n=True)


def _get(doc: Mapping[str, Any], path: str) -> Any:
    cur: Any = doc
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _per_seed(runs: Mapping[str, Any], profile: str, path: str) -> list[float]:
    values = (_get(run["profiles"].get(profile) or {}, path) for run in runs.values())
    return [float(v) for v in values if v is not None]


def _ratio(runs: Mapping[str, Any], a: str, b: str, path: str) -> list[float]:
    out = []
    for run in runs.values():
        x, y = _get(run["profiles"][a], path), _get(run["profiles"][b], path)
        if x is not None and y:
            out.append(x / y)
    return out


def report(name: str, doc: Mapping[str, Any]) -> None:
    runs = doc["runs"]
    print(f"== {name} ({len(runs)} seeds)")
    for profile in ("harmonic-feedback", "harmonic-limit-feedback"):
        initial = _per_seed(runs, profile, "feedback.matrix_error_initial")
        final = _per_seed(runs, profile, "feedback.matrix_error_final")
        fall = [1 - b / a for a, b in zip(initial, final, strict=True) if a]
        print(f"  {profile}: matrix error initial {_pm(initial)} -> final {_pm(final)}; fall {_pm(fall)}")
        rho0 = _per_seed(runs, profile, "feedback.rank_correlation_initial")
        rho = _per_seed(runs, profile, "feedback.rank_correlation_final")
        print(f"    Spearman (aggressor ranking per victim) initial {_pm(rho0)} -> final {_pm(rho)}")
        singled: dict[str, tuple[list[float], list[float]]] = {}
        for run in runs.values():
            for wl, e in (_get(run["profiles"][profile], "feedback.workload_errors") or {}).items():
                singled.setdefault(wl, ([], []))[0].append(e["initial"])
                singled[wl][1].append(e["final"])
        for wl, (a, b) in sorted(singled.items()):
            own_fall = [1 - y / x for x, y in zip(a, b, strict=True) if x]
            print(f"    workload {wl}: own row error {_pm(a)} -> {_pm(b)}; fall {_pm(own_fall)}")
        slo = _per_seed(runs, profile, "feedback.slo_violation_share")
        print(f"    SLO violations (share of reports, truth): {_pm(slo)}")
    for learnt, prior in PAIRS:
        lc = _ratio(runs, learnt, prior, "latency_critical_slowdown_truth.mean")
        apps = sorted(_get(next(iter(runs.values()))["profiles"][prior], "user_request_latency_ms") or {})
        p99 = {app: _ratio(runs, learnt, prior, f"user_request_latency_ms.{app}.p99") for app in apps}
        done = _ratio(runs, learnt, prior, "pods_completed")
        print(f"  {learnt} / {prior}: LC slowdown (truth) x {_pm(lc)}")
        for app, r in p99.items():
            print(f"    p99 user-request latency {app} x {_pm(r)}")
        print(f"    pods completed x {_pm(done)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", default=None, help="Read DIR/<scenario>/sweep.json.")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--scenario", action="append", choices=SCENARIOS, help="Only these (repeatable).")
    args = ap.parse_args()
    for name in args.scenario or SCENARIOS:
        if args.source is not None:
            doc = json.loads((Path(args.source) / name / "sweep.json").read_text())
        else:
            from harmonic.plugins.registry import default_registry
            from harmonic.sim.sweep import LocalExecutor, parse_seeds, prepare_sweep, sweep

            plans, runs = prepare_sweep(
                ROOT / "examples" / "feedback" / f"{name}.yaml",
                [ROOT / c for c in CONFIGS],
                default_registry(),
                parse_seeds(args.seeds),
            )
            doc = sweep(plans, runs, LocalExecutor(jobs=args.jobs))
        report(name, doc)


if __name__ == "__main__":
    main()
