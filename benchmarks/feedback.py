"""The feedback loop's figures over seeds (docs/feedback.md, "Measured"): run (or read) seed sweeps of the
feedback scenarios and print, per scenario, mean ± 95% CI over the seeds of

- the learnt matrix's relative error against the truth, before and after (and the fall, per seed);
- the Spearman correlation of the learnt ranking of aggressors per victim with the truth's;
- the paired ratio learning / prior (per seed, then mean ± CI) of the true latency-critical slowdown
  and of the p99 user-request latency, for the bundled `harmonic` profile and for `harmonic-limit`
  (Dissonance's filter on);
- the jobs completed by the learning profile against its prior twin (what keeping antagonists away costs),
  and the pods and CPU-seconds it completes against kube-scheduler's default profile.

    python benchmarks/feedback.py                       # sweeps of the three scenarios, seeds 1-10, --jobs 2
    python benchmarks/feedback.py --from DIR            # read DIR/<scenario>/sweep.json instead (--out DIR writes them)
    python benchmarks/feedback.py --learning-profile examples/feedback/harmonic-evidence-feedback.yaml
    python benchmarks/feedback.py --learner observationNoise=0.2      # the learner's settings changed
    python benchmarks/feedback.py --scenario examples/feedback/lone-service.yaml  # any file with a feedback block
    python benchmarks/feedback.py --held-out examples/scenarios/hotel-batch.yaml   # a scenario not written
                                                        # for the loop, given a feedback block

With --from the sweeps are the ones `harmonic simulate examples/feedback/<s>.yaml --config
harmonic/data/profiles/harmonic.yaml --config examples/feedback/harmonic-feedback.yaml --config
examples/feedback/harmonic-limit.yaml --config examples/feedback/harmonic-limit-feedback.yaml --seeds 1-10
--jobs 2 --out DIR/<s>` wrote.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from feedback_moves import with_feedback

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
BASELINE = "default-scheduler"
#: In the order printed; a profile that does not learn (``feedback.learning``) only observes: what the
#: loop learns from its placements.
PROFILES = (BASELINE, "harmonic", "harmonic-feedback", "harmonic-limit", "harmonic-limit-feedback")
#: The learner's settings ``--learner`` may change (keys of a scenario's ``feedback`` block).
LEARNER_KEYS = ("observationNoise", "priorSpread", "priorFloor", "sensitivitySpread")


def learner_settings(pairs: Sequence[str]) -> dict[str, float]:
    """``KEY=VALUE`` pairs as feedback-block settings; ValueError naming the bad pair."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in LEARNER_KEYS:
            raise ValueError(
                f"--learner {pair!r}: expected KEY=VALUE with KEY one of {', '.join(LEARNER_KEYS)}"
            )
        try:
            out[key] = float(value)
        except ValueError:
            raise ValueError(f"--learner {pair!r}: {value!r} is not a number") from None
    return out


def profile_names(config: Path) -> list[str]:
    """The schedulerNames a KubeSchedulerConfiguration file defines; ValueError when it defines none."""
    doc = yaml.safe_load(config.read_text())
    profiles = (doc or {}).get("profiles") if isinstance(doc, dict) else None
    names = [p.get("schedulerName") for p in profiles or [] if isinstance(p, dict)]
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{config}: no profiles with a schedulerName")
    return [str(n) for n in names]


def scenario_path(name: str) -> Path:
    """One of ``SCENARIOS`` by name, or a file."""
    return ROOT / "examples" / "feedback" / f"{name}.yaml" if name in SCENARIOS else Path(name)


def scenario_doc(
    path: Path, settings: Mapping[str, float], held_out: bool, learners: Sequence[str] = ()
) -> dict[str, Any]:
    """The scenario at ``path`` with the learner's ``settings`` in its feedback block; a held-out one
    (written without a feedback block) gets ``feedback_moves.ADDED_FEEDBACK``. ValueError when it is not
    a scenario, or a held-out one already has a feedback block. ``learners`` are profiles added to its
    ``feedback.learn``."""
    written = yaml.safe_load(path.read_text())
    if not isinstance(written, dict):
        raise ValueError(f"{path}: not a scenario (a YAML mapping)")
    if held_out and "feedback" in written:
        raise ValueError(
            f"{path}: has a feedback block (written for the loop); --held-out is for scenarios that were not"
        )
    doc = with_feedback(written, add=held_out)
    if doc is None:
        raise ValueError(f"{path}: no feedback block")
    doc["feedback"].update(settings)
    learn = doc["feedback"].get("learn")
    if learners and learn is not None:  # None: every profile with Dissonance learns, the added ones too
        doc["feedback"]["learn"] = [*learn, *learners]
    return doc


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


def _difference(runs: Mapping[str, Any], a: str, b: str, path: str) -> list[float]:
    out = []
    for run in runs.values():
        x, y = _get(run["profiles"][a], path), _get(run["profiles"][b], path)
        if x is not None and y is not None:
            out.append(float(x) - float(y))
    return out


def _fall(runs: Mapping[str, Any], profile: str, error: str) -> str:
    """``feedback.<error>_initial`` -> ``_final`` and the fall, taken per seed then averaged."""
    initial = _per_seed(runs, profile, f"feedback.{error}_initial")
    final = _per_seed(runs, profile, f"feedback.{error}_final")
    fall = [1 - b / a for a, b in zip(initial, final, strict=True) if a]
    return f"initial {_pm(initial)} -> final {_pm(final)}; fall {_pm(fall)}"


def report(name: str, doc: Mapping[str, Any], extra: Sequence[str] = ()) -> None:
    """Print a sweep's figures; ``extra`` names learning profiles added with --learning-profile, each
    paired with ``harmonic``."""
    runs = doc["runs"]
    print(f"== {name} ({len(runs)} seeds)")
    ran = set(next(iter(runs.values()))["profiles"])
    for profile in (*PROFILES, *extra):
        if profile not in ran or not _per_seed(runs, profile, "feedback.matrix_error_initial"):
            continue
        learning = any(_get(run["profiles"][profile], "feedback.learning") for run in runs.values())
        print(
            f"  {profile}{'' if learning else ' (observes)'}: matrix error {_fall(runs, profile, 'matrix_error')}"
        )
        print(f"    own rows, mean over workloads: {_fall(runs, profile, 'workload_error')}")
        if not learning:
            continue
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
    for learnt, prior in (*PAIRS, *((e, "harmonic") for e in extra)):
        if not {learnt, prior} <= ran:
            continue
        lc = _ratio(runs, learnt, prior, "latency_critical_slowdown_truth.mean")
        apps = sorted(_get(next(iter(runs.values()))["profiles"][prior], "user_request_latency_ms") or {})
        p99 = {app: _ratio(runs, learnt, prior, f"user_request_latency_ms.{app}.p99") for app in apps}
        done = _ratio(runs, learnt, prior, "pods_completed")
        print(f"  {learnt} / {prior}: LC slowdown (truth) x {_pm(lc)}")
        for app, r in p99.items():
            print(f"    p99 user-request latency {app} x {_pm(r)}")
        print(f"    pods completed x {_pm(done)}")
        if BASELINE in ran:
            # "Win without a cost": what the learning profile completes against kube-scheduler's default.
            pods = _ratio(runs, learnt, BASELINE, "pods_completed")
            cpu = _ratio(runs, learnt, BASELINE, "cpu_seconds_completed")
            nodes = _ratio(runs, learnt, BASELINE, "nodes_in_use")
            print(
                f"    against {BASELINE}: pods completed x {_pm(pods)}, CPU-seconds completed x {_pm(cpu)}, "
                f"nodes in use x {_pm(nodes)}"
            )
            for kind in ("zone", "node"):
                diff = _difference(runs, learnt, BASELINE, f"{kind}_failure_survivable_share")
                if diff:
                    print(f"      {kind}-failure survivable share, difference {_pm(diff)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", default=None, help="Read DIR/<scenario>/sweep.json.")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--scenario",
        action="append",
        help=f"only these: {', '.join(SCENARIOS)}, or a scenario file with a feedback block (repeatable)",
    )
    ap.add_argument(
        "--learner",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"set the learner's KEY ({', '.join(LEARNER_KEYS)}) in every scenario's feedback block (repeatable)",
    )
    ap.add_argument(
        "--held-out",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="instead of the three scenarios, FILE (a scenario without a feedback block, given one) under "
        "kube-scheduler's default, harmonic and harmonic-feedback (repeatable)",
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="Also write each sweep to OUT/<scenario>/sweep.json."
    )
    ap.add_argument(
        "--learning-profile",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="also run FILE's profiles, learning (added to feedback.learn), each paired with harmonic (repeatable)",
    )
    args = ap.parse_args()
    try:
        settings = learner_settings(args.learner)
        extra = [(f, profile_names(f)) for f in args.learning_profile]
    except (OSError, ValueError) as exc:
        ap.error(str(exc))
    learners = [n for _, names in extra for n in names]
    if args.held_out and (args.source or args.scenario):
        ap.error("--held-out runs its own files: not with --from or --scenario")
    names = args.scenario or list(SCENARIOS)
    if args.source is not None:
        for name in names:
            report(name, json.loads((Path(args.source) / name / "sweep.json").read_text()), learners)
        return
    todo: list[tuple[str, Path, tuple[str, ...], bool]]
    if args.held_out:
        todo = [(path.stem, path, CONFIGS[:2], True) for path in args.held_out]
    else:
        todo = [(Path(n).stem, scenario_path(n), CONFIGS, False) for n in names]
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.sweep import LocalExecutor, parse_seeds, prepare_sweep, sweep

    for name, path, configs, held_out in todo:
        try:
            doc = scenario_doc(path, settings, held_out, learners)
        except (OSError, ValueError) as exc:
            ap.error(str(exc))
        # Written beside the scenario, so the paths it gives relative to itself still resolve.
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=path.parent, delete=False) as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        try:
            plans, runs = prepare_sweep(
                Path(f.name),
                [ROOT / c for c in configs] + [cfg for cfg, _ in extra],
                default_registry(),
                parse_seeds(args.seeds),
            )
        finally:
            Path(f.name).unlink()
        if held_out:
            runs = [r for r in runs if r.name in (BASELINE, *PAIRS[0], *learners)]
        result = sweep(plans, runs, LocalExecutor(jobs=args.jobs))
        if args.out is not None:
            (args.out / name).mkdir(parents=True, exist_ok=True)
            (args.out / name / "sweep.json").write_text(json.dumps(result, indent=2))
        report(name, result, learners)


if __name__ == "__main__":
    main()
