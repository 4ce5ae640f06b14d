"""Hold the `harmonic` profile to the harmony goals on scenarios drawn at random, none of them tuned on.

    python benchmarks/harmony_random.py                               # 24 scenarios, seeds 1-3
    python benchmarks/harmony_random.py --count 24 --first 25         # another 24 (held out)
    python benchmarks/harmony_random.py --config FILE --profile NAME  # judge another profile
    python benchmarks/harmony_random.py --count 5 --write-only --out /tmp/rand   # just the files
    python benchmarks/harmony_random.py --only 1,16 --seeds 1-10                # chosen scenarios

Scenario ``i`` is drawn from a random generator seeded with ``i`` alone, so the same index always
gives the same scenario and a range of indices never used while tuning is a held-out set. Each draw
picks: 2-6 zones; one to three node pools of 4-32 cores with 4 or 8 GiB per core, over all zones or
all but one; one or two of the six application topologies (Online Boutique and the five in
examples/topologies) at 2-4 replicas and 20-150 user actions/s; a batch load of none, light (30% of
the cluster's cores on average), busy (70%) or overloaded (130%) from one or two Poisson Job streams
of 0.5-4-core, 1-24 GiB pods; a node failure, and half the time a zone outage of 5-15 minutes;
`preferZone` routing two times in three, else `random`. Each scenario runs under both profiles for
every seed (`benchmarks/harmony_claims.py`'s judge), and the summary counts, per goal, the scenarios
where it holds, where only its interval fails (unproven), where its mean misses the goal but is no
worse than the default, and where the mean is worse than the default's (a cost, for the availability,
throughput and node rows). `--from-claims` prints the same from a claims.json written by `--out`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from harmony_claims import BASE, MINE, PROFILES, judge

from harmonic.plugins.registry import default_registry
from harmonic.sim.sweep import (
    LocalExecutor,
    exit_on_input_errors,
    parse_seeds,
    prepare_sweep,
    sweep,
    write_sweep,
)

ROOT = Path(__file__).resolve().parents[1]
TOPOLOGIES = {
    "online-boutique": "online-boutique",
    "hotel": str(ROOT / "examples" / "topologies" / "hotel-reservation.json"),
    "media": str(ROOT / "examples" / "topologies" / "media-microservices.json"),
    "social": str(ROOT / "examples" / "topologies" / "social-network.json"),
    "sock": str(ROOT / "examples" / "topologies" / "sock-shop.json"),
    "train": str(ROOT / "examples" / "topologies" / "train-ticket.json"),
}
#: Mean share of the cluster's cores the batch Jobs ask for, per load level.
LOADS = {"idle": 0.0, "light": 0.3, "busy": 0.7, "overloaded": 1.3}
DURATION_MINUTES = 60
#: Goals whose failure in the mean is a cost the profile must not impose (the issue's "no cost" rows).
COST_GOALS = (
    "zone-failure survivable share (diff)",
    "node-failure survivable share (diff)",
    "pods completed (ratio)",
    "cpu_seconds_completed (ratio)",
    "pending at end, excess share of created",
    "nodes in use, mean (ratio)",
    "batch slowdown, truth (ratio)",
)


def _job_stream(r: random.Random, index: int, streams: int, share: float, cores: int) -> dict[str, Any]:
    cpu = r.choice([0.5, 1, 2, 3, 4])
    memory_gi = r.choice([1, 2, 4, 8, 24])
    parallelism = r.choice([1, 2, 4])
    completions = parallelism * r.choice([1, 2])
    median = r.choice([4, 8, 12])
    # Jobs per second so that the stream's running pods ask for its part of ``share`` of the cores
    # (at the median duration): rate * completions * median minutes * cpu = that part.
    rate = share * cores / (streams * cpu * completions * median) / 60
    name = f"job{index}"
    return {
        "type": "arrivals",
        "name": name,
        "namespace": "batch",
        "process": "poisson",
        "rate": float(f"{rate:.4g}"),
        "end": f"{DURATION_MINUTES - 5}m",
        "duration": {"distribution": "lognormal", "median": f"{median}m", "sigma": 0.5},
        "template": {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"labels": {"app": name}},
            "spec": {
                "parallelism": parallelism,
                "completions": completions,
                "template": {
                    "metadata": {"labels": {"app": name, "tier": "batch"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "work",
                                "image": f"example/{name}:1",
                                "resources": {"requests": {"cpu": str(cpu), "memory": f"{memory_gi}Gi"}},
                            }
                        ],
                    },
                },
            },
        },
    }


class Draw(NamedTuple):
    """One drawn scenario: its document, the batch load it was drawn with, and its cluster and
    applications in words (the document's description up to the load)."""

    doc: dict[str, Any]
    load: str
    shape: str


def random_scenario(index: int) -> dict[str, Any]:
    """Scenario ``index`` (a document for `harmonic simulate`); the same index gives the same one."""
    return draw(index).doc


def load_of(index: int) -> str:
    """The batch load scenario ``index`` was drawn with."""
    return draw(index).load


def draw(index: int) -> Draw:
    """Scenario ``index`` with what it was drawn with."""
    r = random.Random(index)
    zones = [f"zone-{chr(ord('a') + k)}" for k in range(r.choice([2, 3, 3, 4, 5, 6]))]
    pools = []
    for p in range(r.choice([1, 2, 3])):
        cpu = r.choice([4, 8, 8, 16, 32])
        pool_zones = zones if p == 0 else r.sample(zones, r.randint(max(1, len(zones) - 1), len(zones)))
        pools.append(
            {
                "name": f"pool{p}",
                "count": r.randint(len(pool_zones), 3 * len(pool_zones) + 2),
                "allocatable": {"cpu": str(cpu), "memory": f"{cpu * r.choice([4, 8])}Gi", "pods": "110"},
                "zones": pool_zones,
                "region": "region-1",
            }
        )
    cores = sum(p["count"] * int(p["allocatable"]["cpu"]) for p in pools)
    workloads: list[dict[str, Any]] = [
        {
            "type": "topology",
            "topology": TOPOLOGIES[app],
            "namespace": app,
            "userRate": r.choice([20, 50, 100, 150]),
            "replicas": r.choice([2, 3, 3, 4]),
        }
        for app in r.sample(sorted(TOPOLOGIES), r.choice([1, 1, 2]))
    ]
    load = r.choice(sorted(LOADS))
    streams = r.choice([1, 2]) if LOADS[load] else 0
    workloads += [_job_stream(r, j, streams, LOADS[load], cores) for j in range(streams)]
    failed_pool = r.choice(pools)
    events: list[dict[str, Any]] = [
        {
            "type": "nodeFailed",
            "at": f"{r.randint(15, 40)}m",
            "node": f"{failed_pool['name']}-{r.randrange(failed_pool['count'])}",
        }
    ]
    if r.random() < 0.5:
        zone, at = r.choice(zones), r.randint(30, 45)
        events += [
            {"type": "zoneFailed", "at": f"{at}m", "zone": zone},
            {"type": "zoneRestored", "at": f"{at + r.choice([5, 10, 15])}m", "zone": zone},
        ]
    routing = r.choice(["preferZone", "preferZone", "random"])
    nodes = " + ".join(f"{p['count']}x{p['allocatable']['cpu']}c" for p in pools)
    apps = ", ".join(
        f"{w['namespace']} x{w['replicas']} @{w['userRate']}/s" for w in workloads if w["type"] == "topology"
    )
    outage = "; zone outage" if len(events) > 1 else ""
    shape = f"{len(zones)} zones, {nodes}; {apps}"
    doc = {
        "apiVersion": "harmonic.dev/v1alpha1",
        "kind": "Scenario",
        "name": f"random-{index}",
        "description": f"{shape}; batch {load}; {routing}{outage}",
        "seed": index,
        "duration": f"{DURATION_MINUTES}m",
        "sampleInterval": "1m",
        "routing": routing,
        "network": {"sameNodeMs": 0, "crossNodeMs": 0.2, "crossZoneMs": 1.0},
        "cluster": {"nodePools": pools},
        "workloads": workloads,
        "events": events,
    }
    return Draw(doc, load, shape)


VERDICTS = ("n/a", "holds", "unproven", "misses", "worse")


def _loads(text: str) -> list[str]:
    loads = [t.strip() for t in text.split(",") if t.strip()]
    unknown = sorted(set(loads) - set(LOADS))
    if unknown or not loads:
        raise argparse.ArgumentTypeError(f"loads are {', '.join(sorted(LOADS))}; got {text!r}")
    return loads


def _indices(text: str) -> list[int]:
    try:
        indices = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"scenario indices are whole numbers, comma-separated; got {text!r}"
        ) from None
    if not indices or min(indices) < 0:
        raise argparse.ArgumentTypeError(f"scenario indices are whole numbers from 0; got {text!r}")
    return list(dict.fromkeys(indices))


def describe(indices: Sequence[int]) -> str:
    """``indices`` for a message: ``random-3..26`` for a run of consecutive ones, else each one."""
    ordered = sorted(indices)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"random-{ordered[0]}..{ordered[-1]}"
    return ", ".join(f"random-{i}" for i in ordered)


def verdict(row: Mapping[str, Any]) -> str:
    """One judged row as ``holds``; ``unproven`` (the mean meets the goal, the interval does not);
    ``misses`` (the mean misses it but is no worse than the default); ``worse`` (the mean is worse than
    the default's: a ratio past 1, a difference past 0); or ``n/a`` (not judged)."""
    if row["holds"] is None or not row["judged"]:
        return "n/a"
    if row["holds"]:
        return "holds"
    mean = row["mean"]
    if mean is None:  # a ratio to a default of 0 where harmonic's is not: worse than the default
        return "worse"
    parity = 1.0 if "(ratio)" in row["goal"] else 0.0
    if row["relation"] == "<=":
        return "worse" if mean > parity else "misses" if mean > row["bound"] else "unproven"
    return "worse" if mean < parity else "misses" if mean < row["bound"] else "unproven"


def summarise(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per goal (p99 rows pooled over applications), how many scenarios give each verdict."""
    table: dict[str, dict[str, int]] = {}
    for result in results:
        seen: dict[str, str] = {}
        for row in result["goals"]:
            if _perturbed(row["goal"]):
                continue
            goal = row["goal"]
            for model in ("p99 latency", "M/M/c p99 latency"):
                if goal.startswith(model + " "):
                    goal = f"{model} (every application)"
            v = verdict(row)
            if goal not in seen or VERDICTS.index(v) > VERDICTS.index(seen[goal]):
                seen[goal] = v
        for goal, v in seen.items():
            table.setdefault(goal, dict.fromkeys(VERDICTS, 0))[v] += 1
    return [{"goal": g, **counts} for g, counts in table.items()]


def _mean(row: Mapping[str, Any]) -> str:
    return "-" if row["mean"] is None else f"{row['mean']:.3f}"


def _perturbed(goal: str) -> bool:
    """The LC rows under the truth's perturbed worlds: shown by harmony_claims, left out here."""
    return "truth x" in goal or "truth mixed" in goal


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--first", type=int, default=1, help="index of the first scenario (default 1)")
    ap.add_argument("--count", type=int, default=24, help="how many scenarios (default 24)")
    ap.add_argument(
        "--only", type=_indices, help="these scenario indices, comma-separated, instead of --first/--count"
    )
    ap.add_argument(
        "--loads",
        type=_loads,
        default=sorted(LOADS),
        help=f"only the scenarios with these batch loads, comma-separated (of {', '.join(sorted(LOADS))})",
    )
    ap.add_argument("--seeds", default="1-3", help="simulation seeds per scenario (default 1-3)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--config", help="a KubeSchedulerConfiguration holding the profile to judge")
    ap.add_argument("--profile", default=MINE, help=f"the profile to judge (default: {MINE})")
    ap.add_argument(
        "--out", help="write the scenarios, a sweep.json per scenario (random-N/) and claims.json here"
    )
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table, a row per scenario")
    ap.add_argument("--from-claims", metavar="CLAIMS_JSON", help="summarise a claims.json written by --out")
    ap.add_argument(
        "--write-only", action="store_true", help="write the scenario files (needs --out) and stop"
    )
    args = ap.parse_args()
    if args.count < 1 or args.first < 0:
        ap.error("--count must be at least 1 and --first at least 0")
    if args.write_only and not args.out:
        ap.error("--write-only needs --out")
    if args.from_claims:
        results = json.loads(Path(args.from_claims).read_text())
        for result in results:
            report(result)
        print_summary(results, f"{len(results)} scenarios from {args.from_claims}")
        if args.markdown:
            print("\n" + markdown(results))
        return 0
    drawn = args.only or range(args.first, args.first + args.count)
    indices = [i for i in drawn if load_of(i) in args.loads]
    if not indices:
        ap.error(f"no scenario among {describe(drawn)} has a load in {', '.join(args.loads)}")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out or scratch)
        out.mkdir(parents=True, exist_ok=True)
        files = {i: out / f"random-{i}.yaml" for i in indices}
        for i, path in files.items():
            path.write_text(yaml.safe_dump(random_scenario(i), sort_keys=False))
        if args.write_only:
            print(f"wrote {len(files)} scenarios to {out}")
            return 0
        results = run(args, files)
        if args.markdown:
            print("\n" + markdown(results))
        if args.out:
            (out / "claims.json").write_text(json.dumps(results, indent=2))
    return 0


def run(args: argparse.Namespace, files: Mapping[int, Path]) -> list[dict[str, Any]]:
    seeds = parse_seeds(args.seeds)
    registry = default_registry()
    configs = [PROFILES] if args.config is None else [PROFILES, Path(args.config)]
    results = []
    t0 = time.perf_counter()
    for path in files.values():
        plans, runs = prepare_sweep(path, configs, registry, seeds)
        runs = [r for r in runs if r.name in (BASE, args.profile)]
        if len(runs) != 2:
            raise SystemExit(f"--profile {args.profile}: no such profile in {', '.join(map(str, configs))}")
        doc = sweep(plans, runs, LocalExecutor(args.jobs))
        if args.out:
            write_sweep(path.with_suffix(""), doc)
        result = judge(doc, args.profile)
        results.append(result)
        report(result)
        sys.stdout.flush()
    print_summary(
        results,
        f"{len(files)} scenarios ({describe(list(files))}), seeds {args.seeds}, "
        f"{args.profile} against {BASE}, {time.perf_counter() - t0:.0f} s wall",
    )
    return results


def report(result: Mapping[str, Any]) -> None:
    """One scenario: its shape, and every goal that does not hold with its mean and verdict."""
    name = result["scenario"]["name"]
    index = int(name.rsplit("-", 1)[1])
    bad = [
        f"{row['goal']} {_mean(row)} ({v})"
        for row in result["goals"]
        if (v := verdict(row)) in ("unproven", "misses", "worse") and not _perturbed(row["goal"])
    ]
    print(f"{name}: {random_scenario(index)['description']}")
    print("    " + ("every goal holds" if not bad else "\n    ".join(bad)))
    print("    harm (issue 35's bounds): " + ("; ".join(result.get("harm", ())) or "none"))


#: The rows of the Markdown table: (column, goal name or prefix).
MARKDOWN_COLUMNS = (
    ("zone survivable", "zone-failure survivable share (diff)"),
    ("node survivable", "node-failure survivable share (diff)"),
    ("pods completed", "pods completed (ratio)"),
    ("cross-node", "cross-node traffic share (ratio)"),
    ("p99", "p99 latency "),
    ("LC slowdown (truth)", "LC slowdown, truth (ratio)"),
)
_MARK = {"holds": "", "unproven": " ~", "misses": " ✗", "worse": " ✗✗", "n/a": ""}


def markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """One row per scenario: its load and shape, and the mean of the main goals with its verdict
    (~ unproven, ✗ misses the goal, ✗✗ worse than the default; traffic under random routing is
    reported, not judged)."""
    lines = [
        "| scenario | load | shape | " + " | ".join(c for c, _ in MARKDOWN_COLUMNS) + " |",
        "|---" * (3 + len(MARKDOWN_COLUMNS)) + "|",
    ]
    for result in results:
        name = result["scenario"]["name"]
        index = int(name.rsplit("-", 1)[1])
        drawn = draw(index)
        cells = []
        for _, goal in MARKDOWN_COLUMNS:
            rows = [
                r
                for r in result["goals"]
                if r["goal"] == goal or (goal.endswith(" ") and r["goal"].startswith(goal))
            ]
            parts = []
            for r in rows:
                app = r["goal"][len(goal) :].split(" ")[0] + " " if goal.endswith(" ") else ""
                value = (
                    "—"
                    if r["mean"] is None and r["holds"] is None
                    else _mean(r)
                    if r["mean"] is not None
                    else "inf"
                )
                mark = _MARK[verdict(r)] if r["judged"] else " (reported)"
                parts.append(f"{app}{value}{mark}")
            cells.append(", ".join(parts) or "—")
        lines.append(f"| {name} | {drawn.load} | {drawn.shape} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def print_summary(results: Sequence[Mapping[str, Any]], title: str) -> None:
    columns = VERDICTS[1:] + VERDICTS[:1]
    print(f"\n{title}")
    print(f"  {'goal':44} " + " ".join(f"{v:>8}" for v in columns))
    for row in summarise(results):
        mark = "  (a cost)" if row["goal"] in COST_GOALS and row["worse"] else ""
        print(f"  {row['goal']:44} " + " ".join(f"{row[v]:>8}" for v in columns) + mark)


if __name__ == "__main__":
    raise SystemExit(exit_on_input_errors(main))
