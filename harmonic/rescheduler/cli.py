"""``harmonic reschedule``: run a descheduler policy (plus Harmonic's plans) once over a cluster.

``--manifests`` reads the cluster from YAML/JSON files (Nodes, Pods, PodDisruptionBudgets, Namespaces,
PriorityClasses, PersistentVolumeClaims; ``kind: List`` and multi-document files work). With
``--dry-run`` nothing is changed anywhere: the plan is printed, and it is exactly what a real run
would decide, because both run the same placement simulation.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from harmonic.api.errors import ObjectError
from harmonic.framework.config import ConfigError
from harmonic.rescheduler.policy import PolicyError, read_policy
from harmonic.rescheduler.runner import RunOptions, RunResult, run_once
from harmonic.rescheduler.state import from_manifests


def _objects(paths: tuple[str, ...]) -> Iterator[Mapping[str, Any]]:
    for path in paths:
        try:
            docs = list(yaml.safe_load_all(Path(path).read_text()))
        except (OSError, yaml.YAMLError) as e:
            raise click.ClickException(f"{path}: {e}") from None
        for d in docs:
            if (isinstance(d, Mapping) and d.get("kind") == "List") or (
                isinstance(d, Mapping) and "items" in d and "kind" not in d
            ):
                yield from (i for i in d.get("items") or () if isinstance(i, Mapping))
            elif isinstance(d, Mapping):
                yield d


def table(result: RunResult) -> str:
    rows = [("POD", "FROM", "TO", "WHY", "GAIN")]
    for e in result.log.evictions:
        rows.append(
            (e.pod.key, e.node, e.to or "-", f"{e.plugin}: {e.why}", "-" if e.gain is None else f"{e.gain:g}")
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4] for r in rows]
    for n in result.log.nominations:
        lines.append(f"nominate {n.pod.key} -> {n.node} ({n.plan})")
    for plan, outcome, detail in result.log.plans:
        lines.append(f"plan {plan or '-'}: {outcome}: {detail}")
    lines.append(f"{len(result.log.evictions)} eviction(s), {len(result.log.skipped)} skipped")
    return "\n".join(lines)


def as_json(result: RunResult) -> dict[str, Any]:
    return {
        "evictions": [e.row() for e in result.log.evictions],
        "nominations": [{"pod": n.pod.key, "node": n.node, "plan": n.plan} for n in result.log.nominations],
        "plans": [{"plan": p, "outcome": o, "detail": d} for p, o, d in result.log.plans],
        "skipped": [{"pod": s.pod.key, "plugin": s.plugin, "reason": s.reason} for s in result.log.skipped],
        "budgetViolations": result.budget_violations,
    }


@click.command()
@click.option(
    "--policy",
    "policy_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="DeschedulerPolicy (descheduler/v1alpha2) YAML.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="KubeSchedulerConfiguration whose profile simulates placement (default: kube-scheduler's default profile).",
)
@click.option("--profile", default=None, help="Profile of --config to simulate with (default: its first).")
@click.option(
    "--manifests",
    "manifests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Cluster objects to read (repeatable).",
)
@click.option(
    "--once", is_flag=True, help="Run once and exit (required: the live loop is not available yet)."
)
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--json", "as_json_flag", is_flag=True, help="Print the plan as JSON.")
@click.option(
    "--max-evictions-per-run", type=click.IntRange(min=0), default=None, help="Global eviction rate per run."
)
@click.option(
    "--cooldown",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds before a moved pod may move again.",
)
@click.option("--now", type=float, default=None, help="Current time in epoch seconds (default: the clock).")
def reschedule(
    policy_path: str,
    config_path: str | None,
    profile: str | None,
    manifests: tuple[str, ...],
    once: bool,
    dry_run: bool,
    as_json_flag: bool,
    max_evictions_per_run: int | None,
    cooldown: float,
    now: float | None,
) -> None:
    """Evict pods per a descheduler policy, or print what would be evicted (--dry-run)."""
    from harmonic.cli import _load
    from harmonic.plugins.registry import default_registry

    if not (once and dry_run and manifests):
        raise click.UsageError(
            "only `--once --dry-run --manifests FILE...` is available: the live loop is not built yet"
        )
    try:
        policy = read_policy(policy_path)
        cfg = _load(config_path)
        state = from_manifests(_objects(manifests), now=time.time() if now is None else now)
    except (PolicyError, ConfigError, ObjectError) as e:
        click.echo(f"error: {' '.join(str(e).split())}", err=True)
        sys.exit(1)
    profiles = {p.scheduler_name: p for p in cfg.profiles}
    if profile is not None and profile not in profiles:
        raise click.UsageError(f"--profile {profile!r}: no such profile (have {', '.join(profiles)})")
    prof = profiles[profile] if profile else cfg.profiles[0]
    result = run_once(
        policy, state, prof, default_registry(), options=RunOptions(max_evictions_per_run, cooldown)
    )
    click.echo(json.dumps(as_json(result), indent=2) if as_json_flag else table(result))
