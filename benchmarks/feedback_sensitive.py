"""How much learning could gain on the `sensitive` scenario at best (docs/feedback.md, "The sensitive
scenario's ceiling"), against what it gains.

The issue asks learning to cut the `harmonic` profile's true latency-critical (LC) slowdown and p99
user-request latency by 25% on examples/feedback/sensitive.yaml, where cartservice is three times as
sensitive to its neighbours as its class. Whatever the learnt model makes the scheduler (or a move) do
for cartservice, it cannot do better than cartservice suffering nothing at all. So, over seeds, this
runs four things and prints per-seed ratios against `harmonic` on the scenario as written (mean ± 95%
CI):

- **ceiling**: the same scenario and the same `harmonic` profile, with cartservice's true sensitivity
  set to 0 (`groundTruth.workloads`) — the same placements (the profile reads no feedback), so the
  ratio is exactly what cartservice's slowdown weighs in the two figures;
- **learning**: `harmonic-feedback` (the bundled profile whose Dissonance reads the learnt model);
- **learning, recreated**: cartservice's pods deleted after an hour (a `podsDeleted` event, as a rollout
  or a node drain would recreate them), `harmonic-feedback` / `harmonic` on that scenario: the learnt
  model places the new pods;
- **learning + moves**: `harmonic-feedback` with `feedback.moves: {maxPerRound: 1}` (the learnt model
  also asks the rescheduler's evictor for moves; the `harmonic` twin of the same run moves too, so
  the ratio is against `harmonic` without moves), with the CPU-seconds completed (what restarts cost);
- **prior right**: examples/feedback/prior-right.yaml, `harmonic-feedback` / `harmonic` (learning must
  do no harm where the prior was right).

    python benchmarks/feedback_sensitive.py                 # seeds 1-10, --jobs 2
    python benchmarks/feedback_sensitive.py --seeds 1-3 --jobs 1
    python benchmarks/feedback_sensitive.py --parts moves   # only `harmonic` and learning + moves
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
EXAMPLES = ROOT / "examples" / "feedback"
CONFIGS = (ROOT / "harmonic/data/profiles/harmonic.yaml", EXAMPLES / "harmonic-feedback.yaml")
SENSITIVE = "boutique/cartservice"
PARTS = ("ceiling", "learning", "recreated", "moves", "prior-right")


def _pm(values: list[float]) -> str:
    return "x " + mean_ci(values, n=True)


def _figures(profile: Mapping[str, Any]) -> tuple[float, float]:
    lc = profile["latency_critical_slowdown_truth"]["mean"]
    p99 = profile["user_request_latency_ms"]["boutique"]["p99"]
    return float(lc), float(p99)


def _ratios(a: Mapping[int, tuple[float, float]], b: Mapping[int, tuple[float, float]]) -> str:
    seeds = sorted(set(a) & set(b))
    lc = [a[s][0] / b[s][0] for s in seeds if b[s][0]]
    p99 = [a[s][1] / b[s][1] for s in seeds if b[s][1]]
    return f"LC slowdown (truth) {_pm(lc)}; p99 user-request latency {_pm(p99)}"


def _run(
    doc: Mapping[str, Any], profiles: tuple[str, ...], seeds: str, jobs: int, tmp: Path, tag: str
) -> dict[str, dict[int, Any]]:
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.sweep import LocalExecutor, parse_seeds, prepare_sweep, sweep

    path = tmp / f"{tag}.yaml"
    path.write_text(yaml.safe_dump(dict(doc)))
    plans, runs = prepare_sweep(path, list(CONFIGS), default_registry(), parse_seeds(seeds))
    runs = [r for r in runs if r.name in profiles]
    out = sweep(plans, runs, LocalExecutor(jobs=jobs))
    return {
        name: {int(seed): run["profiles"][name] for seed, run in out["runs"].items()} for name in profiles
    }


def _fig(runs: Mapping[int, Any]) -> dict[int, tuple[float, float]]:
    return {seed: _figures(m) for seed, m in runs.items()}


def _cpu_seconds(a: Mapping[int, Any], b: Mapping[int, Any]) -> str:
    """Per-seed ratio of the CPU-seconds completed: what restarts cost the batch work."""
    return _pm(
        [a[s]["cpu_seconds_completed"] / b[s]["cpu_seconds_completed"] for s in sorted(set(a) & set(b))]
    )


def _moves(runs: Mapping[int, Any]) -> str:
    """What became of the moves asked for, summed over the seeds: cartservice's, and everyone's."""
    blocks = [m["feedback"]["moves"] for m in runs.values()]
    mine = [b["workloads"].get(SENSITIVE, {}) for b in blocks]
    total = {k: sum(b[k] for b in blocks) for k in ("asked", "executed")}
    ends = {k: sum(b["reservations"][k] for b in blocks) for k in blocks[0]["reservations"]} if blocks else {}
    return (
        f"{SENSITIVE}: asked {sum(c.get('asked', 0) for c in mine)}, moved {sum(c.get('executed', 0) for c in mine)}, "
        f"refused because the profile's scheduler would put it back on its node "
        f"{sum(c.get('home', 0) for c in mine)}; all workloads: asked {total['asked']}, moved "
        f"{total['executed']}, onto {_pm([float(b['target_nodes']) for b in blocks])[2:]} distinct nodes per seed; "
        f"replacements' reservations: {', '.join(f'{k} {v}' for k, v in ends.items())}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated, of {', '.join(PARTS)} (default: all); `harmonic` as written always runs",
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        ap.error(f"--parts: unknown {', '.join(sorted(parts - set(PARTS)))}; known: {', '.join(PARTS)}")
    logging.disable(logging.WARNING)  # the simulated mesh's "no signal" lines, once per round
    both = ("harmonic", "harmonic-feedback")
    sensitive = yaml.safe_load((EXAMPLES / "sensitive.yaml").read_text())
    ceiling = yaml.safe_load((EXAMPLES / "sensitive.yaml").read_text())
    ceiling["groundTruth"]["workloads"] = [{"workload": SENSITIVE, "sensitivity": 0}]
    recreated = yaml.safe_load((EXAMPLES / "sensitive.yaml").read_text())
    recreated.setdefault("events", []).append(
        {
            "type": "podsDeleted",
            "at": "60m",
            "namespace": "boutique",
            "selector": {"matchLabels": {"app": "cartservice"}},
        }
    )
    moves = yaml.safe_load((EXAMPLES / "sensitive.yaml").read_text())
    moves["feedback"]["moves"] = {"maxPerRound": 1}
    prior = yaml.safe_load((EXAMPLES / "prior-right.yaml").read_text())
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        learning = "learning" in parts
        base = _run(sensitive, both if learning else ("harmonic",), args.seeds, args.jobs, tmp, "sensitive")
        h = _fig(base["harmonic"])
        print(f"== sensitive ({len(base['harmonic'])} seeds), against `harmonic` as written")
        if "ceiling" in parts:
            top = _run(ceiling, ("harmonic",), args.seeds, args.jobs, tmp, "ceiling")
            print(f"  ceiling (cartservice suffers nothing): {_ratios(_fig(top['harmonic']), h)}")
        if learning:
            print(f"  learning (harmonic-feedback):          {_ratios(_fig(base['harmonic-feedback']), h)}")
        if "recreated" in parts:
            again = _run(recreated, both, args.seeds, args.jobs, tmp, "recreated")
            ratio = _ratios(_fig(again["harmonic-feedback"]), _fig(again["harmonic"]))
            print(f"  learning, cartservice recreated at 1 h: {ratio} (against `harmonic`, recreated too)")
        if "moves" in parts:
            moved = _run(moves, ("harmonic-feedback",), args.seeds, args.jobs, tmp, "moves")
            print(f"  learning + moves:                      {_ratios(_fig(moved['harmonic-feedback']), h)}")
            print(f"    CPU-seconds completed: {_cpu_seconds(moved['harmonic-feedback'], base['harmonic'])}")
            print(f"    moves: {_moves(moved['harmonic-feedback'])}")
        if "prior-right" in parts:
            right = _run(prior, both, args.seeds, args.jobs, tmp, "prior-right")
            ratio = _ratios(_fig(right["harmonic-feedback"]), _fig(right["harmonic"]))
            print(f"== prior-right: harmonic-feedback / harmonic: {ratio}")


if __name__ == "__main__":
    main()
