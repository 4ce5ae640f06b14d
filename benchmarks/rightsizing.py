"""Right-sizing against the VPA-style baseline (docs/feedback.md, "Right-sizing: measured").

Runs examples/feedback/rightsizing.yaml (three services asking 3x the smallest CPU request that keeps
their SLO) over seeds under the bundled `harmonic` profile, once with Harmonic's SLO-aware right-sizer
and once with the VPA-style recommender (P90 of a decaying usage histogram + 15%, same guardrails), and
prints mean ± 95% CI over the seeds of

- per service: adjustment rounds until the request is within 20% of the smallest SLO-keeping request
  (the truth's), the final request over that smallest one, and the share of its reports that broke the
  SLO (the truth's, noise-free) — against the share under the original requests at the same moments;
- across the services: slack in the first round and over the last 30 minutes — Autopilot's
  definition, summed over the pods before dividing: (sum of CPU requested - sum of CPU used) / sum of
  CPU requested, averaged over the window's one-minute samples; memory's beside it — and the SLO
  violation share over the run and over the last 30 minutes;
- the least slack any fixed request per service allows over the last 30 minutes while breaking the SLO
  in at most 5%, 1% or 0% of the reports (``slack_at_violation_share``: the truth's).

With ``--vary ARG=v1,v2,...`` (a guardrail of ``RightSizingArgs``: ``sloMargin``, ``minStep``,
``sloQuantile``...) it runs only Harmonic's right-sizer, once per value, and prints the trade-off
curve: slack against violations, beside those floors.

    python benchmarks/rightsizing.py                 # seeds 1-10, --jobs 2
    python benchmarks/rightsizing.py --seeds 1-3 --jobs 1
    python benchmarks/rightsizing.py --vary sloMargin=0,0.05,0.1,0.2
    python benchmarks/rightsizing.py --set maxUtilization=1 --vary revertReports=5,3
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harmonic.sim.stats import mean_ci as _pm

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "feedback" / "rightsizing.yaml"
PROFILE = "harmonic"


def _blocks(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [run["profiles"][PROFILE]["feedback"]["rightsizing"] for run in doc["runs"].values()]


def report(name: str, doc: Mapping[str, Any]) -> None:
    blocks = _blocks(doc)
    print(f"== {name} ({len(blocks)} seeds, profile {PROFILE})")
    for wl in sorted(blocks[0]["workloads"]):
        rows = [b["workloads"][wl] for b in blocks]
        reach = [float(r["rounds_to_within_20pct"]) for r in rows if r["rounds_to_within_20pct"] is not None]
        never = sum(r["rounds_to_within_20pct"] is None for r in rows)
        print(
            f"  {wl}: rounds to within 20% {_pm(reach, 1)} (never: {never}); final / smallest SLO-keeping "
            f"request {_pm([r['final_over_smallest'] for r in rows])}; SLO violations "
            f"{_pm([r['violation_share'] for r in rows])} (original requests "
            f"{_pm([r['violation_share_original'] for r in rows])})"
        )
    print(
        f"  slack (CPU) first round {_pm([b['slack_initial'] for b in blocks])} -> last 30 min "
        f"{_pm([b['slack_final'] for b in blocks])} (at the smallest SLO-keeping requests: "
        f"{_pm([b['slack_at_smallest'] for b in blocks])}); memory, last 30 min "
        f"{_pm([b['slack_final_memory'] for b in blocks])}"
    )
    print(f"  {_floors(blocks)}")
    print(
        f"  SLO violations {_pm([b['violation_share'] for b in blocks])}, last 30 min "
        f"{_pm([b['violation_share_final'] for b in blocks])} (original requests "
        f"{_pm([b['violation_share_original'] for b in blocks])}); resizes "
        f"{_pm([float(b['resizes']) for b in blocks], 1)}, reverts {_pm([float(b['reverts']) for b in blocks], 1)}"
    )


def _floors(blocks: list[dict[str, Any]]) -> str:
    shares = blocks[0]["slack_at_violation_share"]
    parts = [f"{float(k):.0%}: {_pm([b['slack_at_violation_share'][k] for b in blocks])}" for k in shares]
    return "least slack of a fixed request per service breaking the SLO in at most " + ", ".join(parts)


def curve(setting: str, doc: Mapping[str, Any]) -> None:
    blocks = _blocks(doc)
    print(
        f"  {setting:<16} slack {_pm([b['slack_final'] for b in blocks])}; violations "
        f"{_pm([b['violation_share'] for b in blocks])} over the run, "
        f"{_pm([b['violation_share_final'] for b in blocks])} over the last 30 min"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--vary", default=None, help="ARG=v1,v2,...: the trade-off curve over one guardrail.")
    ap.add_argument(
        "--set", action="append", default=[], help="ARG=v: a guardrail held for every run (repeatable)."
    )
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.sweep import LocalExecutor, parse_seeds, prepare_sweep, sweep

    def run(doc: Mapping[str, Any], tmp: str, tag: str) -> dict[str, Any]:
        path = Path(tmp) / f"rightsizing-{tag}.yaml"
        path.write_text(yaml.safe_dump(dict(doc)))
        plans, runs = prepare_sweep(path, [], default_registry(), parse_seeds(args.seeds))
        out: dict[str, Any] = sweep(
            plans, [r for r in runs if r.name == PROFILE], LocalExecutor(jobs=args.jobs)
        )
        return out

    doc = yaml.safe_load(SCENARIO.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        if args.vary is not None:
            held = {k: float(v) for k, _, v in (a.partition("=") for a in args.set)}
            name, _, values = args.vary.partition("=")
            for i, value in enumerate(float(v) for v in values.split(",")):
                doc["feedback"]["rightsizing"]["args"] = {**held, name: value}
                result = run(doc, tmp, f"{name}-{value:g}")
                if i == 0:
                    print(f"== trade-off over {name} ({len(_blocks(result))} seeds, profile {PROFILE})")
                    print(f"  {_floors(_blocks(result))}")
                curve(f"{name} {value:g}", result)
            return
        for recommender in ("harmonic", "vpa"):
            doc["feedback"]["rightsizing"]["recommender"] = recommender
            report(f"recommender {recommender}", run(doc, tmp, recommender))


if __name__ == "__main__":
    main()
