"""Seed sweeps: run one scenario under many seeds and every profile, each (seed, profile) run an
independent task, and summarise every numeric metric over the seeds.

A task carries its own plan (built from the scenario with the seed overridden) and profile run, so a
worker needs nothing but Harmonic installed: no scenario files, no state from the parent. Workers build
their own plugin registry and world. Executors:

- ``LocalExecutor``: a process pool of ``jobs`` workers, each task in a fresh spawned process.
- ``DaskExecutor``: a Dask cluster (``harmonic[dask]``) at an address, or a loopback ``LocalCluster``.
- ``RayExecutor``: a Ray cluster (``harmonic[ray]``) at an address, or a local one; each task in a
  fresh worker process.

Summary (``sweep.json``): per profile and flattened metric (nested keys joined with dots, e.g.
``time_to_schedule_seconds.p99`` or ``traffic.boutique.cross_node_traffic_share``) the mean, sample
standard deviation, n and Student-t 95% confidence interval over the seeds; and per profile other than
the baseline (``default-scheduler``) the paired per-seed ratio (profile / baseline) and difference
(profile - baseline), each with its interval. A claim such as "harmonic <= 0.4 x default" holds when
the ratio's whole interval satisfies it (``check_claim``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, Protocol

from harmonic.framework.config import DEFAULT_SCHEDULER_NAME
from harmonic.framework.registry import Registry
from harmonic.plugins.registry import default_registry
from harmonic.sim.engine import Simulation
from harmonic.sim.metrics import WALL_CLOCK_KEYS
from harmonic.sim.plan import Plan
from harmonic.sim.profiles import ProfileRun
from harmonic.sim.report import metrics_document
from harmonic.sim.run import prepare
from harmonic.sim.stats import interval

EXECUTORS = ("local", "dask", "ray")


class SeedSpecError(ValueError):
    pass


def parse_seeds(spec: str) -> list[int]:
    """``"1-10"``, ``"1,3,7"`` or a mix (``"1-3,7"``) as a sorted list of distinct seeds."""
    seeds: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise SeedSpecError(f"{part!r} is not a seed or a range of seeds (e.g. 1-10, 1,3,7)") from None
        if first > last:
            raise SeedSpecError(f"seed range {part!r} is empty (start > end)")
        seeds.update(range(first, last + 1))
    return sorted(seeds)


@dataclass(frozen=True)
class Task:
    """One (seed, profile) run: everything a worker needs, picklable."""

    seed: int
    plan: Plan
    run: ProfileRun


@dataclass(frozen=True)
class Result:
    seed: int
    profile: str
    #: The ``metrics.json`` document of this run alone (``scenario`` and one profile).
    document: dict[str, Any]


def run_task(task: Task) -> Result:
    """Run one task in this process (what every executor's workers call)."""
    worlds = Simulation(task.plan, [task.run], default_registry()).run()
    return Result(task.seed, task.run.name, metrics_document(task.plan, worlds))


class Executor(Protocol):
    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[Result]:
        """Results in completion order."""
        ...


class LocalExecutor:
    """A process pool; each task runs in a freshly spawned process (no state shared between runs)."""

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or default_jobs()

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[Result]:
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(self.jobs, mp_context=ctx, max_tasks_per_child=1)
        try:
            futures = [pool.submit(fn, t) for t in tasks]
            for f in as_completed(futures):
                yield f.result()
        finally:
            # On a failed run or an interrupt, runs not yet started are dropped, not waited for.
            pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """A Dask distributed cluster at ``address`` (``tcp://host:8786``); without one, a LocalCluster of
    ``jobs`` single-threaded worker processes on loopback for the duration of the sweep."""

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        self.address = address
        self.jobs = jobs or default_jobs()

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[Result]:
        dd = _optional("distributed", "dask")
        cluster = None
        if self.address is None:
            cluster = dd.LocalCluster(
                n_workers=self.jobs,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            )
        try:
            with dd.Client(self.address if cluster is None else cluster) as client:
                futures = client.map(fn, list(tasks), pure=False)
                for f in dd.as_completed(futures):
                    yield f.result()
        finally:
            if cluster is not None:
                cluster.close()


class RayExecutor:
    """A Ray cluster at ``address`` (``ray://host:10001`` or ``auto``); without one, a local Ray of
    ``jobs`` CPUs. Each task runs in a fresh worker process (``max_calls=1``)."""

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        self.address = address
        self.jobs = jobs or default_jobs()

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[Result]:
        ray = _optional("ray", "ray")
        started = not ray.is_initialized()
        if started:
            if self.address is None:
                ray.init(num_cpus=self.jobs, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=self.address, log_to_driver=False)
        try:
            remote = ray.remote(num_cpus=1, max_calls=1)(fn)
            pending = [remote.remote(t) for t in tasks]
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield ray.get(done[0])
        finally:
            if started:
                ray.shutdown()


class ExecutorUnavailable(RuntimeError):
    def __init__(self, name: str) -> None:
        super().__init__(f"the {name} executor needs the optional extra: pip install 'harmonic[{name}]'")
        self.name = name


def _optional(module: str, extra: str) -> Any:
    """An optional extra's module, untyped (neither ships type information we rely on)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ExecutorUnavailable(extra) from None


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def executor(
    name: Literal["local", "dask", "ray"] | str, jobs: int | None = None, address: str | None = None
) -> Executor:
    if name == "local":
        if address is not None:
            raise ValueError("--address applies to the dask and ray executors, not local")
        return LocalExecutor(jobs)
    if name in ("dask", "ray"):
        if importlib.util.find_spec("distributed" if name == "dask" else "ray") is None:
            raise ExecutorUnavailable(name)
        return DaskExecutor(address, jobs) if name == "dask" else RayExecutor(address, jobs)
    raise ValueError(f"unknown executor {name!r} (one of {', '.join(EXECUTORS)})")


# --------------------------------------------------------------------------- running
def prepare_sweep(
    scenario: str | Path | None,
    configs: Sequence[str | Path],
    registry: Registry,
    seeds: Sequence[int],
    topologies: Sequence[str] = (),
    user_rate: float = 10.0,
) -> tuple[dict[int, Plan], list[ProfileRun]]:
    """The scenario's plan under each seed, and the profile runs. Raises ``ScenarioError`` /
    ``ConfigError`` here, in the caller's process, before any worker starts."""
    if not seeds:
        raise SeedSpecError("no seeds to sweep")
    plans: dict[int, Plan] = {}
    runs: list[ProfileRun] = []
    for s in seeds:
        plans[s], runs = prepare(scenario, configs, registry, topologies, user_rate, s)
    return plans, runs


def with_routing(plans: Mapping[int, Plan], routing: str | None) -> dict[int, Plan]:
    """``plans`` with every application routed by ``routing`` instead of the scenario's (None: as they
    are): the same placements judged under another routing."""
    if routing is None:
        return dict(plans)
    return {
        seed: replace(plan, topologies=[replace(t, routing=routing) for t in plan.topologies])
        for seed, plan in plans.items()
    }


def exit_on_input_errors(main: Callable[[], int]) -> int:
    """Run a sweep command's ``main``: a bad scenario, profile file or seed list is one line naming it
    on stderr and exit code 1, not a traceback."""
    from harmonic.framework.config import ConfigError
    from harmonic.sim.errors import ScenarioError

    try:
        return main()
    except (ScenarioError, ConfigError, SeedSpecError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def tasks_for(plans: Mapping[int, Plan], runs: Sequence[ProfileRun]) -> list[Task]:
    return [Task(seed, plan, r) for seed, plan in plans.items() for r in runs]


def sweep(
    plans: Mapping[int, Plan],
    runs: Sequence[ProfileRun],
    ex: Executor,
    progress: Callable[[Result], None] | None = None,
    fn: Callable[[Task], Result] = run_task,
) -> dict[str, Any]:
    """Run every (seed, profile) and return the ``sweep.json`` document. ``plans`` maps each seed to
    the scenario's plan under that seed."""
    results: list[Result] = []
    for r in ex.map(fn, tasks_for(plans, runs)):
        results.append(r)
        if progress is not None:
            progress(r)
    return sweep_document(results, [r.name for r in runs])


def sweep_document(results: Iterable[Result], profiles: Sequence[str]) -> dict[str, Any]:
    """Per-seed metrics documents (each like the ``metrics.json`` of ``simulate --seed``) and the summary."""
    by_seed: dict[int, dict[str, Any]] = {}
    for r in results:
        doc = by_seed.setdefault(r.seed, {"scenario": r.document["scenario"], "profiles": {}})
        doc["profiles"][r.profile] = r.document["profiles"][r.profile]
    seeds = sorted(by_seed)
    runs = {
        str(s): {
            "scenario": by_seed[s]["scenario"],
            "profiles": {p: by_seed[s]["profiles"][p] for p in profiles if p in by_seed[s]["profiles"]},
        }
        for s in seeds
    }
    first = runs[str(seeds[0])]["scenario"] if seeds else {}
    baseline = DEFAULT_SCHEDULER_NAME if DEFAULT_SCHEDULER_NAME in profiles else None
    return {
        "scenario": {"name": first.get("name"), "source": first.get("source")},
        "seeds": seeds,
        "profiles": list(profiles),
        "baseline": baseline,
        "summary": summarize_sweep(runs, profiles),
        "paired": paired(runs, profiles, baseline) if baseline else {},
        "runs": runs,
    }


# --------------------------------------------------------------------------- aggregation
def flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a metrics dict under dotted keys (booleans, strings, lists and None left out)."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[key] = float(v)
    return out


def _per_seed(runs: Mapping[str, Any], profile: str) -> list[dict[str, float]]:
    return [flatten(doc["profiles"][profile]) for doc in runs.values() if profile in doc["profiles"]]


def _ordered_keys(rows: Iterable[Mapping[str, float]]) -> list[str]:
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(row))
    return list(keys)


def summarize_sweep(runs: Mapping[str, Any], profiles: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per profile and metric, the interval over the seeds that report the metric (a metric can be
    absent in some seeds, e.g. a pending reason that occurred only there: its n says so)."""
    out: dict[str, dict[str, Any]] = {}
    for p in profiles:
        rows = _per_seed(runs, p)
        out[p] = {k: interval([row[k] for row in rows if k in row]).as_dict() for k in _ordered_keys(rows)}
    return out


def paired(runs: Mapping[str, Any], profiles: Sequence[str], baseline: str) -> dict[str, dict[str, Any]]:
    """Per profile other than the baseline and metric: the per-seed difference (profile - baseline)
    and ratio (profile / baseline) over the seeds where both report it. The ratio is None when the
    baseline is zero in any of those seeds (a ratio there is undefined, and dropping the seed would
    hide it); use the difference then."""
    out: dict[str, dict[str, Any]] = {}
    for p in profiles:
        if p == baseline:
            continue
        pairs: dict[str, list[tuple[float, float]]] = {}
        for doc in runs.values():
            if p not in doc["profiles"] or baseline not in doc["profiles"]:
                continue
            mine, base = flatten(doc["profiles"][p]), flatten(doc["profiles"][baseline])
            for k, v in mine.items():
                if k in base:
                    pairs.setdefault(k, []).append((v, base[k]))
        out[p] = {
            k: {
                "difference": interval([a - b for a, b in xs]).as_dict(),
                "ratio": (None if any(b == 0 for _, b in xs) else interval([a / b for a, b in xs]).as_dict()),
            }
            for k, xs in pairs.items()
        }
    return out


def check_claim(
    doc: Mapping[str, Any],
    profile: str,
    metric: str,
    bound: float,
    relation: Literal["<=", ">="] = "<=",
    of: Literal["ratio", "difference", "value"] = "ratio",
) -> bool:
    """Whether the claim holds on the whole 95% interval: e.g. ``check_claim(doc, "harmonic",
    "cross_node_traffic_share", 0.4)`` is "harmonic's cross-node share <= 0.4 x the baseline's".
    Raises ``KeyError`` for a metric the sweep has not; an undefined ratio or a single seed never holds."""
    stat = doc["summary"][profile][metric] if of == "value" else doc["paired"][profile][metric][of]
    if stat is None or stat["ci95_high"] is None:
        return False
    if relation == "<=":
        return bool(stat["ci95_high"] <= bound)
    return bool(stat["ci95_low"] >= bound)


# --------------------------------------------------------------------------- output
def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.4g}"


def _pm(stat: Mapping[str, Any] | None) -> str:
    if stat is None:
        return "-"
    hw = stat["ci95_half_width"]
    return _fmt(stat["mean"]) if hw is None else f"{_fmt(stat['mean'])} ± {_fmt(hw)}"


def format_sweep_table(doc: Mapping[str, Any], metrics: Sequence[str] | None = None) -> str:
    """One line per (metric, profile): mean ± 95% CI half-width, n, and beside every profile but the
    baseline its paired ratio to the baseline (or the difference where the ratio is undefined).
    ``metrics`` are fnmatch patterns selecting metrics; by default all but wall-clock ones."""
    summary, pairs, baseline = doc["summary"], doc["paired"], doc["baseline"]
    keys = _ordered_keys(summary[p] for p in doc["profiles"])
    if metrics:
        keys = [k for k in keys if any(fnmatchcase(k, m) for m in metrics)]
    else:
        keys = [k for k in keys if k.rsplit(".", 1)[-1] not in WALL_CLOCK_KEYS]
    vs = f"vs {baseline}" if baseline else ""
    header = ["metric", "profile", "mean ± 95% CI", "n", vs]
    rows: list[list[str]] = []
    for k in keys:
        label = k
        for p in doc["profiles"]:
            stat = summary[p].get(k)
            if stat is None:
                continue
            rel = ""
            pair = pairs.get(p, {}).get(k)
            if pair is not None:
                rel = (
                    f"x {_pm(pair['ratio'])}"
                    if pair["ratio"] is not None
                    else f"{_pm(pair['difference'])} (diff)"
                )
            rows.append([label, p, _pm(stat), str(stat["n"]), rel])
            label = ""
    widths = [max(len(header[c]), *(len(r[c]) for r in rows)) if rows else len(header[c]) for c in range(5)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def write_sweep(out_dir: str | Path, doc: Mapping[str, Any]) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
