"""What the feedback loop's moves do (docs/feedback.md, "Moves: measured"): a scenario with
`feedback.moves: {maxPerRound: 1}` against the same scenario without it, under kube-scheduler's default
profile, `harmonic` and `harmonic-feedback`, over seeds. Per profile: the moves asked and carried out
per run, and per-seed ratios (with moves / without, then mean ± 95% CI) of the true latency-critical
slowdown, the p99 of user-request latency (the scenario's first application), the pods completed and the
CPU-seconds completed (what restarts cost the batch work).

    python benchmarks/feedback_moves.py                       # examples/feedback/antagonist.yaml, seeds 1-10
    python benchmarks/feedback_moves.py --scenario examples/feedback/sensitive.yaml --seeds 1-3 --jobs 1
    python benchmarks/feedback_moves.py --scenario examples/scenarios/hotel-batch.yaml --add-feedback
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harmonic.sim.stats import mean_ci

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = (
    ROOT / "harmonic/data/profiles/harmonic.yaml",
    ROOT / "examples/feedback/harmonic-feedback.yaml",
)
PROFILES = ("default-scheduler", "harmonic", "harmonic-feedback")


def _sweep(doc: Mapping[str, Any], beside: Path, seeds: str, jobs: int) -> dict[str, dict[int, Any]]:
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.sweep import LocalExecutor, parse_seeds, prepare_sweep, sweep

    # Written beside the scenario, so the paths it gives relative to itself still resolve.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=beside.parent, delete=False) as f:
        yaml.safe_dump(dict(doc), f)
    try:
        plans, runs = prepare_sweep(Path(f.name), list(CONFIGS), default_registry(), parse_seeds(seeds))
    finally:
        Path(f.name).unlink()
    runs = [r for r in runs if r.name in PROFILES]
    out = sweep(plans, runs, LocalExecutor(jobs=jobs))
    return {p: {int(s): run["profiles"][p] for s, run in out["runs"].items()} for p in PROFILES}


def _p99(m: Mapping[str, Any]) -> float:
    first = sorted(m["user_request_latency_ms"])[0]
    return float(m["user_request_latency_ms"][first]["p99"])


FIGURES = {
    "LC slowdown (truth)": lambda m: float(m["latency_critical_slowdown_truth"]["mean"]),
    "p99": _p99,
    "pods completed": lambda m: float(m["pods_completed"]),
    "CPU-s completed": lambda m: float(m["cpu_seconds_completed"]),
}


def rows(with_moves: Mapping[int, Any], without: Mapping[int, Any]) -> dict[str, str]:
    """One profile's row: moves asked / carried out per run, and each figure's per-seed ratio."""
    seeds = sorted(set(with_moves) & set(without))
    moves = [with_moves[s]["feedback"]["moves"] for s in seeds]
    out = {
        "moves asked / carried out": f"{mean_ci([float(b['asked']) for b in moves], 1)} / "
        f"{mean_ci([float(b['executed']) for b in moves], 1)}"
    }
    for name, fig in FIGURES.items():
        ratios = [fig(with_moves[s]) / fig(without[s]) for s in seeds if fig(without[s])]
        out[name] = "x " + mean_ci(ratios, n=True)
    return out


#: What ``--add-feedback`` gives a scenario that has no ``feedback`` block: reports every minute, and
#: ``harmonic-feedback`` learning from them.
ADDED_FEEDBACK = {"interval": "1m", "learn": ["harmonic-feedback"]}


def with_feedback(doc: Mapping[str, Any], add: bool) -> dict[str, Any] | None:
    """The scenario with its ``feedback`` block (``ADDED_FEEDBACK`` when it has none and ``add``), moves
    left out; None when it has none and none may be added."""
    out = yaml.safe_load(yaml.safe_dump(dict(doc)))
    if not isinstance(out.get("feedback"), dict):
        if not add:
            return None
        out["feedback"] = dict(ADDED_FEEDBACK)
    out["feedback"].pop("moves", None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(ROOT / "examples/feedback/antagonist.yaml"))
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--add-feedback",
        action="store_true",
        help=f"give a scenario without a `feedback` block {ADDED_FEEDBACK} (a scenario it was not written for)",
    )
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # the simulated mesh's "no signal" lines, once per round
    written = yaml.safe_load(Path(args.scenario).read_text())
    if not isinstance(written, dict):
        ap.error(f"--scenario {args.scenario}: not a scenario (a YAML mapping)")
    doc = with_feedback(written, args.add_feedback)
    if doc is None:
        ap.error(
            f"--scenario {args.scenario}: no `feedback` block, so nothing would ask for moves "
            "(--add-feedback gives it one)"
        )
    moved = yaml.safe_load(yaml.safe_dump(doc))
    moved["feedback"]["moves"] = {"maxPerRound": 1}
    scenario = Path(args.scenario)
    without = _sweep(doc, scenario, args.seeds, args.jobs)
    with_moves = _sweep(moved, scenario, args.seeds, args.jobs)
    added = "" if isinstance(written.get("feedback"), dict) else f" (feedback block added: {ADDED_FEEDBACK})"
    print(f"== {scenario.name}{added}: with feedback.moves {{maxPerRound: 1}} / without, per seed")
    for p in PROFILES:
        print(f"  {p}:")
        for name, text in rows(with_moves[p], without[p]).items():
            print(f"    {name}: {text}")


if __name__ == "__main__":
    main()
