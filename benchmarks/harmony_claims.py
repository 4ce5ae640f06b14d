"""Hold the `harmonic` profile to the harmony goals on the simulator's ground truth, over seeds.

    python benchmarks/harmony_claims.py                                  # bundled scenario, seeds 1-10
    python benchmarks/harmony_claims.py --scenario examples/scenarios/sockshop-two-zones-idle.yaml
    python benchmarks/harmony_claims.py --all --seeds 1-10 --jobs 2 --out /tmp/claims
    python benchmarks/harmony_claims.py --all --routing preferZone     # every application zone-routed
    python benchmarks/harmony_claims.py --config examples/harmony-ablation.yaml --profile dissonance-only

Runs `harmonic simulate SCENARIO --seeds ...` with kube-scheduler's default profile and the bundled
`harmonic` profile (both in harmonic/data/profiles/harmonic.yaml; or another profile, `--profile` from
`--config`), then checks each goal on the 95% confidence interval of the per-seed paired figure
(harmonic against default on the same seed):

    zone / node failure survivable share      harmonic - default >= 0
    pods completed, cpu_seconds_completed      harmonic / default >= 0.98
    pods pending at end                        harmonic - default <= 2% of the default's pods created
    nodes in use (mean)                        harmonic / default <= 1.05
    cross-node traffic share (preferZone)      harmonic / default <= 0.4
    cross-zone traffic share (preferZone)      harmonic / default <= 0.2 (difference <= 0 if default is 0)
    user-request latency p99, per application  harmonic / default <= 0.7, under each latency model
    latency-critical slowdown (truth)          harmonic / default <= 0.6
    batch slowdown (truth, CPU-weighted)       harmonic / default <= 1.05

A p99 gain is claimed only when it holds under both latency models (M/M/1 per replica, and M/M/c per
service: docs/simulator.md, "Two latency models"); a gain under one model only is not claimed. Each
scenario's "harm" line lists the rows past issue 35's no-harm bounds (``HARM``: pods and CPU-seconds
completed below x0.99, nodes in use above x1.02, survivability down by more than 0.01, batch slowdown
above x1.05, a p99 whose mean ratio is above 1.05 or whose interval is wholly above 1, and the same for
the latency-critical slowdown when it rises by 0.02 or more).

Every figure is the simulator's ground truth (harmonic/sim/truth), never a plugin's model. The LC
slowdown is also shown under the truth's perturbed interference (x0.5, x2, mixed). A goal "holds" when
the whole interval satisfies it; the row prints mean and 95% CI either way. Below the goals, figures
that explain them are reported without a goal: the CPU stranded while Jobs wait (harmonic - default,
cores: what segregating latency-critical pods from batch costs in throughput). With --out the sweep
documents are written there (one sweep.json per scenario) and a claims.json beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harmonic.plugins.registry import default_registry
from harmonic.sim.profiles import BUNDLED_PROFILES_DIR
from harmonic.sim.run import BUNDLED_SCENARIO
from harmonic.sim.stats import interval
from harmonic.sim.sweep import (
    LocalExecutor,
    exit_on_input_errors,
    parse_seeds,
    prepare_sweep,
    sweep,
    with_routing,
    write_sweep,
)

ROOT = Path(__file__).resolve().parents[1]
PROFILES = BUNDLED_PROFILES_DIR / "harmonic.yaml"
EXAMPLES = ROOT / "examples" / "scenarios"
BASE, MINE = "default-scheduler", "harmonic"

Metrics = Mapping[str, Any]


@dataclass(frozen=True)
class Goal:
    name: str
    #: Per-seed figure from (harmonic, default); None where undefined in that seed.
    figure: Callable[[Metrics, Metrics], float | None]
    relation: str  # "<=" or ">="
    bound: float
    #: Only judged under preferZone routing (reported otherwise).
    zone_routing_only: bool = False


def _ratio(key: Callable[[Metrics], float | None]) -> Callable[[Metrics, Metrics], float | None]:
    def f(mine: Metrics, base: Metrics) -> float | None:
        a, b = key(mine), key(base)
        if a is None or b is None or b == 0:
            return None
        return a / b

    return f


def _difference(key: Callable[[Metrics], float | None]) -> Callable[[Metrics, Metrics], float | None]:
    def f(mine: Metrics, base: Metrics) -> float | None:
        a, b = key(mine), key(base)
        return None if a is None or b is None else a - b

    return f


def _pending_excess(mine: Metrics, base: Metrics) -> float:
    """Pending at end beyond the default's, as a share of the default's pods created."""
    return (mine["pods_pending"] - base["pods_pending"]) / max(base["pods_created"], 1)


def _cross_zone(mine: Metrics, base: Metrics) -> float | None:
    a, b = mine["cross_zone_traffic_share"], base["cross_zone_traffic_share"]
    if a is None or b is None:
        return None
    # With zone routing the default often keeps every call in its zone: then "no more than the
    # default" is the only meaningful bound, expressed as a ratio of 0 when harmonic matches it.
    if b == 0:
        return 0.0 if a == 0 else float("inf")
    return a / b


def _lc(m: Metrics) -> float | None:
    t = m.get("latency_critical_slowdown_truth") or {}
    return t.get("mean")


def _lc_perturbed(variant: str) -> Callable[[Metrics], float | None]:
    def f(m: Metrics) -> float | None:
        t = ((m.get("truth_perturbed") or {}).get(variant) or {}).get("latency_critical_slowdown_truth") or {}
        return t.get("mean")

    return f


def _p99(app: str, key: str = "user_request_latency_ms") -> Callable[[Metrics], float | None]:
    def f(m: Metrics) -> float | None:
        return ((m.get(key) or {}).get(app) or {}).get("p99")

    return f


def _batch(m: Metrics) -> float | None:
    return (m.get("batch_slowdown_truth") or {}).get("mean")


#: The second latency model's p99 (M/M/c per service, docs/simulator.md "Two latency models").
POOLED = "user_request_latency_ms_pooled"


def goals(apps: Sequence[str], variants: Sequence[str]) -> list[Goal]:
    out = [
        Goal(
            "zone-failure survivable share (diff)",
            _difference(lambda m: m["zone_failure_survivable_share"]),
            ">=",
            0,
        ),
        Goal(
            "node-failure survivable share (diff)",
            _difference(lambda m: m["node_failure_survivable_share"]),
            ">=",
            0,
        ),
        Goal("pods completed (ratio)", _ratio(lambda m: m["pods_completed"]), ">=", 0.98),
        Goal("cpu_seconds_completed (ratio)", _ratio(lambda m: m["cpu_seconds_completed"]), ">=", 0.98),
        Goal("pending at end, excess share of created", _pending_excess, "<=", 0.02),
        Goal("nodes in use, mean (ratio)", _ratio(lambda m: m["nodes_in_use"]), "<=", 1.05),
        Goal(
            "cross-node traffic share (ratio)",
            _ratio(lambda m: m["cross_node_traffic_share"]),
            "<=",
            0.4,
            True,
        ),
        Goal("cross-zone traffic share (ratio)", _cross_zone, "<=", 0.2, True),
    ]
    out += [Goal(f"p99 latency {app} (ratio)", _ratio(_p99(app)), "<=", 0.7) for app in apps]
    out += [Goal(f"M/M/c p99 latency {app} (ratio)", _ratio(_p99(app, POOLED)), "<=", 0.7) for app in apps]
    out.append(Goal("LC slowdown, truth (ratio)", _ratio(_lc), "<=", 0.6))
    out.append(Goal("batch slowdown, truth (ratio)", _ratio(_batch), "<=", 1.05))
    out += [Goal(f"LC slowdown, truth {v} (ratio)", _ratio(_lc_perturbed(v)), "<=", 0.6) for v in variants]
    return out


#: Reported beside the goals, judged against nothing: (name, per-seed figure).
CONTEXT: tuple[tuple[str, Callable[[Metrics, Metrics], float | None]], ...] = (
    (
        "CPU stranded while pods wait (cores, diff)",
        _difference(lambda m: m.get("stranded_cpu_cores_while_pending")),
    ),
    ("LC slowdown, truth (diff)", _difference(_lc)),
    ("batch slowdown, truth (diff)", _difference(_batch)),
)


def claimed_p99(rows: Sequence[Mapping[str, Any]], apps: Sequence[str]) -> list[dict[str, Any]]:
    """Per application, whether its p99 gain is claimed: only when it holds under both latency models
    (a gain that exists under one model only is not claimed; undecided when either is)."""
    by_goal = {r["goal"]: r for r in rows}
    out = []
    for app in apps:
        first, second = by_goal[f"p99 latency {app} (ratio)"], by_goal[f"M/M/c p99 latency {app} (ratio)"]
        verdicts = (first["holds"], second["holds"])
        holds = None if None in verdicts else all(verdicts)
        out.append({"application": app, "holds": holds, "means": [first["mean"], second["mean"]]})
    return out


#: Issue 35's no-harm bounds, judged on the rows above: goal -> (kind, bound). "low": harm when the
#: mean is below the bound; "high": harm when the mean is above it; "ratio": harm when the mean ratio
#: is above the bound or its interval lies wholly above 1.
HARM: dict[str, tuple[str, float]] = {
    "zone-failure survivable share (diff)": ("low", -0.01),
    "node-failure survivable share (diff)": ("low", -0.01),
    "pods completed (ratio)": ("low", 0.99),
    "cpu_seconds_completed (ratio)": ("low", 0.99),
    "nodes in use, mean (ratio)": ("high", 1.02),
    "batch slowdown, truth (ratio)": ("high", 1.05),
}
#: A latency-critical slowdown rise below this (absolute) is no harm, whatever the ratio.
LC_RISE_IGNORED = 0.02


def harms(result: Mapping[str, Any]) -> list[str]:
    """The rows where the profile does harm by issue 35's bounds, each with its mean."""
    out = []
    context = {c["figure"]: c for c in result.get("context", ())}
    for r in result["goals"]:
        goal, mean, ci = r["goal"], r["mean"], r["ci95"]
        if r.get("unbounded_seeds") and r["relation"] == "<=":
            out.append(f"{goal}: inf")
            continue
        if mean is None:
            continue
        above_one = ci is not None and ci[0] is not None and ci[0] > 1
        if goal in HARM:
            kind, bound = HARM[goal]
            if (kind == "low" and mean < bound) or (kind == "high" and mean > bound):
                out.append(f"{goal}: {mean:.3f}")
        elif goal.startswith(("p99 latency ", "M/M/c p99 latency ")) and (mean > 1.05 or above_one):
            out.append(f"{goal}: {mean:.3f}")
        elif goal == "LC slowdown, truth (ratio)" and (mean > 1.05 or above_one):
            rise = (context.get("LC slowdown, truth (diff)") or {}).get("mean")
            if rise is not None and rise >= LC_RISE_IGNORED:
                out.append(f"{goal}: {mean:.3f} (+{rise:.3f})")
    return out


def judge(doc: Mapping[str, Any], mine: str = MINE) -> dict[str, Any]:
    """The goals for profile ``mine`` against the default profile in a sweep document."""
    runs = [r["profiles"] for r in doc["runs"].values() if BASE in r["profiles"] and mine in r["profiles"]]
    if not runs:
        raise SystemExit(f"{doc['scenario']['source']}: no seed ran both {BASE} and {mine}")
    first = runs[0][BASE]
    apps = sorted(first["user_request_latency_ms"])
    variants = sorted(first.get("truth_perturbed") or {})
    routings = sorted({t["routing"] for t in (first.get("traffic") or {}).values()})
    zone_routing = routings == ["preferZone"]
    rows = []
    for g in goals(apps, variants):
        values = [v for r in runs if (v := g.figure(r[mine], r[BASE])) is not None]
        row: dict[str, Any] = {"goal": g.name, "relation": g.relation, "bound": g.bound, "n": len(values)}
        unbounded = sum(1 for v in values if math.isinf(v))
        if not values:
            row.update(mean=None, ci95=None, holds=None)
        elif unbounded:
            # A ratio to a default of 0 (harmonic > 0 there): no interval exists, and a ratio bound
            # cannot hold on that seed. Say so rather than print a NaN interval (nor write NaN or
            # Infinity, which are not JSON, to claims.json).
            row.update(mean=None, ci95=None, holds=g.relation == ">=", unbounded_seeds=unbounded)
        else:
            iv = interval(values)
            low, high = iv.low, iv.high
            if low is None or high is None:
                holds = None
            else:
                holds = high <= g.bound if g.relation == "<=" else low >= g.bound
            row.update(mean=iv.mean, ci95=[low, high], holds=holds)
        row["judged"] = zone_routing or not g.zone_routing_only
        rows.append(row)
    context = []
    for name, figure in CONTEXT:
        values = [v for r in runs if (v := figure(r[mine], r[BASE])) is not None]
        spread = interval(values) if values else None
        context.append(
            {
                "figure": name,
                "n": len(values),
                "mean": None if spread is None else spread.mean,
                "ci95": None if spread is None else [spread.low, spread.high],
            }
        )
    result = {
        "scenario": doc["scenario"],
        "seeds": doc["seeds"],
        "routing": routings,
        "goals": rows,
        "context": context,
        "p99_claimed": claimed_p99(rows, apps),
    }
    result["harm"] = harms(result)
    return result


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == float("inf"):
        return "inf"
    return f"{v:.3f}"


def print_claims(result: Mapping[str, Any]) -> None:
    sc = result["scenario"]
    print(
        f"\n{sc['name']} ({sc['source']}), seeds {result['seeds'][0]}-{result['seeds'][-1]}, "
        f"routing {', '.join(result['routing']) or '-'}"
    )
    print(f"  {'goal':44} {'mean':>8} {'95% CI':>19}  {'goal':>8}  verdict")
    for r in result["goals"]:
        ci = "-" if r["ci95"] is None else f"[{_fmt(r['ci95'][0])}, {_fmt(r['ci95'][1])}]"
        verdict = {True: "holds", False: "FAILS", None: "n/a"}[r["holds"]]
        if r.get("unbounded_seeds"):
            verdict += (
                f" (the default's is 0 on {r['unbounded_seeds']} of {r['n']} seeds where harmonic's is not)"
            )
        if not r["judged"]:
            verdict += " (reported: routing is not preferZone)"
        mean = "inf" if r.get("unbounded_seeds") else _fmt(r["mean"])
        print(f"  {r['goal']:44} {mean:>8} {ci:>19}  {r['relation']} {r['bound']:<5}  {verdict}")
    for c in result.get("context", ()):
        ci = (
            "-" if c["ci95"] is None or None in c["ci95"] else f"[{_fmt(c['ci95'][0])}, {_fmt(c['ci95'][1])}]"
        )
        print(f"  {c['figure']:44} {_fmt(c['mean']):>8} {ci:>19}  {'':8}  reported")
    for p in result.get("p99_claimed", ()):
        verdict = {True: "claimed", False: "not claimed", None: "undecided"}[p["holds"]]
        print(f"  p99 gain {p['application']}, both latency models: {verdict}")
    print("  harm (issue 35's bounds): " + ("; ".join(result.get("harm", ())) or "none"))


def markdown_claims(result: Mapping[str, Any]) -> str:
    """The same rows as a Markdown table (docs/harmony.md quotes these)."""
    lines = ["| goal | harmonic vs default, mean [95% CI] | goal | verdict |", "|---|---|---|---|"]
    for r in result["goals"]:
        ci = "" if r["ci95"] is None else f" [{_fmt(r['ci95'][0])}, {_fmt(r['ci95'][1])}]"
        verdict = {True: "holds", False: "**fails**", None: "n/a"}[r["holds"]]
        if r.get("unbounded_seeds"):
            verdict += f" (default 0, harmonic > 0 on {r['unbounded_seeds']} of {r['n']} seeds)"
        if not r["judged"]:
            verdict = f"reported ({verdict})"
        lines.append(f"| {r['goal']} | {_fmt(r['mean'])}{ci} | {r['relation']} {r['bound']} | {verdict} |")
    for c in result.get("context", ()):
        ci = (
            "" if c["ci95"] is None or None in c["ci95"] else f" [{_fmt(c['ci95'][0])}, {_fmt(c['ci95'][1])}]"
        )
        lines.append(f"| {c['figure']} | {_fmt(c['mean'])}{ci} | — | reported |")
    for p in result.get("p99_claimed", ()):
        verdict = {True: "claimed", False: "not claimed", None: "undecided"}[p["holds"]]
        lines.append(f"| p99 gain {p['application']}, both latency models | — | both <= 0.7 | {verdict} |")
    lines.append(f"| harm (issue 35's bounds) | {'; '.join(result.get('harm', ())) or 'none'} | — | — |")
    return "\n".join(lines)


#: The columns of ``summary_table``: (heading, goal or context figure; a trailing space takes every
#: application's row).
SUMMARY_COLUMNS = (
    ("pods", "pods completed (ratio)"),
    ("CPU-s", "cpu_seconds_completed (ratio)"),
    ("nodes", "nodes in use, mean (ratio)"),
    ("node surv.", "node-failure survivable share (diff)"),
    ("batch slowdown", "batch slowdown, truth (ratio)"),
    ("LC slowdown", "LC slowdown, truth (ratio)"),
    ("p99 M/M/1", "p99 latency "),
    ("p99 M/M/c", "M/M/c p99 latency "),
)


def _cell(row: Mapping[str, Any]) -> str:
    if row.get("unbounded_seeds"):
        return "inf"
    if row["mean"] is None:
        return "—"
    ci = row["ci95"]
    return f"{row['mean']:.3f}" + ("" if ci is None or None in ci else f" [{ci[0]:.2f}, {ci[1]:.2f}]")


def summary_table(results: Sequence[Mapping[str, Any]]) -> str:
    """One Markdown row per scenario: mean [95% CI] of the no-harm rows and the gains (harmonic against
    the default, paired per seed), the p99 gains claimed under both latency models, and the harm."""
    head = ["scenario", "seeds", *(c for c, _ in SUMMARY_COLUMNS), "p99 gain claimed", "harm"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for result in results:
        cells = []
        for _, goal in SUMMARY_COLUMNS:
            rows = [
                r
                for r in result["goals"]
                if r["goal"] == goal or (goal.endswith(" ") and r["goal"].startswith(goal))
            ]
            if goal.endswith(" "):
                cells.append(
                    "; ".join(f"{r['goal'][len(goal) :].split(' ')[0]} {_cell(r)}" for r in rows) or "—"
                )
            else:
                cells.append(_cell(rows[0]) if rows else "—")
        claimed = ", ".join(p["application"] for p in result.get("p99_claimed", ()) if p["holds"]) or "none"
        seeds = result["seeds"]
        lines.append(
            f"| {result['scenario']['name']} | {seeds[0]}-{seeds[-1]} | "
            + " | ".join(cells)
            + f" | {claimed} | {'; '.join(result.get('harm', ())) or 'none'} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", action="append", default=[], help="scenario file (repeatable)")
    ap.add_argument(
        "--all",
        action="store_true",
        help="the bundled scenario and every examples/scenarios/*.yaml with an application topology",
    )
    ap.add_argument(
        "--routing",
        choices=("random", "preferZone", "preferNode"),
        help="run every application under this routing instead of the scenario's",
    )
    ap.add_argument(
        "--config",
        help="a KubeSchedulerConfiguration holding the profile to judge (default: the bundled profiles); "
        "the default profile is taken from the bundled file when this one has none",
    )
    ap.add_argument("--profile", default=MINE, help=f"the profile to judge (default: {MINE})")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", help="write sweep.json per scenario and claims.json here")
    ap.add_argument("--markdown", action="store_true", help="print each scenario's rows as a Markdown table")
    ap.add_argument(
        "--summary",
        action="store_true",
        help="with --from-sweep: one Markdown row per sweep (the no-harm rows, the gains, the harm)",
    )
    ap.add_argument(
        "--from-sweep",
        metavar="SWEEP_JSON",
        action="extend",
        nargs="+",
        default=[],
        help="judge a sweep.json written before (harmonic simulate --seeds ... --config "
        "harmonic/data/profiles/harmonic.yaml) instead of running",
    )
    args = ap.parse_args()
    scenarios: list[str | None] = list(args.scenario)
    if args.all:
        scenarios = [None] + [str(p) for p in sorted(EXAMPLES.glob("*.yaml")) if "topology" in p.read_text()]
    if not scenarios:
        scenarios = [None]
    if args.from_sweep and args.summary:
        results = [judge(json.loads(Path(p).read_text()), args.profile) for p in args.from_sweep]
        print(summary_table(results))
        return 0
    if args.from_sweep:
        for path in args.from_sweep:
            result = judge(json.loads(Path(path).read_text()), args.profile)
            print(markdown_claims(result) if args.markdown else "", end="\n" if args.markdown else "")
            if not args.markdown:
                print_claims(result)
        return 0
    seeds = parse_seeds(args.seeds)
    registry = default_registry()
    configs = [PROFILES] if args.config is None else [PROFILES, Path(args.config)]
    results = []
    for sc in scenarios:
        t0 = time.perf_counter()
        plans, runs = prepare_sweep(sc, configs, registry, seeds)
        runs = [r for r in runs if r.name in (BASE, args.profile)]
        if len(runs) != 2:
            ap.error(f"--profile {args.profile}: no such profile in {', '.join(map(str, configs))}")
        plans = with_routing(plans, args.routing)
        doc = sweep(plans, runs, LocalExecutor(args.jobs))
        result = judge(doc, args.profile)
        result["wall_seconds"] = round(time.perf_counter() - t0, 1)
        results.append(result)
        print_claims(result)
        if args.markdown:
            print(markdown_claims(result))
        print(f"  ({len(seeds)} seeds x {len(runs)} profiles in {result['wall_seconds']} s wall)")
        if args.out:
            name = (Path(sc).stem if sc else BUNDLED_SCENARIO.stem) + (
                f"-{args.routing}" if args.routing else ""
            )
            write_sweep(Path(args.out) / name, doc)
        sys.stdout.flush()
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "claims.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(exit_on_input_errors(main))
