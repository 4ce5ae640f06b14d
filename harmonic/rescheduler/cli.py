"""``harmonic reschedule``: run a descheduler policy (plus Harmonic's plans) once over a cluster.

Without ``--manifests`` it talks to the API server (see ``live.py``). ``--manifests`` reads the cluster
from YAML/JSON files (Nodes, Pods, PodDisruptionBudgets, Namespaces,
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
from typing import TYPE_CHECKING, Any

import click
import yaml

from harmonic import safeyaml
from harmonic.api.errors import ObjectError
from harmonic.framework.config import ConfigError, Profile
from harmonic.rescheduler.args import parse_duration
from harmonic.rescheduler.policy import Policy, PolicyError, read_policy
from harmonic.rescheduler.runner import RunOptions, RunResult, run_once
from harmonic.rescheduler.state import from_manifests
from harmonic.startup import Prepared

if TYPE_CHECKING:
    from harmonic.cluster.informer import Informer

#: How long loop mode waits for its informers' first lists before giving up.
CACHE_SYNC_SECONDS = 60.0


def _objects(paths: tuple[str, ...]) -> Iterator[Mapping[str, Any]]:
    for path in paths:
        try:
            docs = safeyaml.load_all(Path(path).read_text())
        except OSError as e:
            raise click.ClickException(f"{path}: cannot read: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise click.ClickException(f"{path}: not valid YAML: {safeyaml.problem(e)}") from None
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
    help="Read the cluster from these files instead of an API server (repeatable; dry runs only).",
)
@click.option("--once", is_flag=True, help="Run one cycle and exit.")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--json", "as_json_flag", is_flag=True, help="Print the plan as JSON (with --once).")
@click.option("--interval", default="2m", show_default=True, help="Time between cycles (Go duration).")
@click.option(
    "--max-evictions-per-run",
    type=click.IntRange(min=0),
    default=None,
    help="Global eviction rate per cycle.",
)
@click.option(
    "--cooldown",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds before a moved pod may move again.",
)
@click.option(
    "--now",
    type=float,
    default=None,
    help="Current time in epoch seconds for --manifests (default: the clock).",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="kubeconfig file (default: in-cluster, $KUBECONFIG or ~/.kube/config).",
)
@click.option("--context", default=None, help="kubeconfig context.")
@click.option(
    "--lease-name", default="harmonic-rescheduler", show_default=True, help="The rescheduler's own Lease."
)
@click.option("--lease-namespace", default="kube-system", show_default=True)
@click.option(
    "--bind", "bind_address", default="0.0.0.0", show_default=True, help="Address of /metrics and /healthz."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=10258,
    show_default=True,
    help="Port of /metrics and /healthz (0: none).",
)
def reschedule(
    policy_path: str,
    config_path: str | None,
    profile: str | None,
    manifests: tuple[str, ...],
    once: bool,
    dry_run: bool,
    as_json_flag: bool,
    interval: str,
    max_evictions_per_run: int | None,
    cooldown: float,
    now: float | None,
    kubeconfig: str | None,
    context: str | None,
    lease_name: str,
    lease_namespace: str,
    bind_address: str,
    port: int,
) -> None:
    """Evict pods per a descheduler policy plus Harmonic's plans, or print what would be evicted.

    \b
    harmonic reschedule --policy P --once --dry-run [--json]   # the plan, nothing changed
    harmonic reschedule --policy P --once                      # one cycle, evicting
    harmonic reschedule --policy P --interval 2m               # the loop, with its own Lease
    """
    from harmonic.plugins.registry import default_registry
    from harmonic.startup import prepare

    if manifests and not (once and dry_run):
        raise click.UsageError("--manifests reads a cluster from files: use it with --once --dry-run")
    try:
        policy = read_policy(policy_path)
        prepared = prepare(config_path, "reschedule", kubeconfig, context)
        cfg = prepared.config
        every = parse_duration(interval)
        state = (
            from_manifests(_objects(manifests), now=time.time() if now is None else now)
            if manifests
            else None
        )
    except (PolicyError, ConfigError, ObjectError) as e:
        click.echo(f"error: {' '.join(str(e).split())}", err=True)
        sys.exit(1)
    except ValueError as e:
        raise click.UsageError(f"--interval: {e}") from None
    profiles = {p.scheduler_name: p for p in cfg.profiles}
    if profile is not None and profile not in profiles:
        raise click.UsageError(f"--profile {profile!r}: no such profile (have {', '.join(profiles)})")
    prof = profiles[profile] if profile else cfg.profiles[0]
    options = RunOptions(max_evictions_per_run, cooldown)
    if state is not None:
        result = run_once(policy, state, prof, default_registry(), options=options)
        click.echo(json.dumps(as_json(result), indent=2) if as_json_flag else table(result))
        return
    _live(
        policy,
        prepared,
        prof,
        options,
        dry_run,
        once,
        as_json_flag,
        every,
        kubeconfig,
        context,
        lease_name,
        lease_namespace,
        bind_address,
        port,
    )


def _live(
    policy: Policy,
    prepared: Prepared,
    prof: Profile,
    options: RunOptions,
    dry_run: bool,
    once: bool,
    as_json_flag: bool,
    every: float,
    kubeconfig: str | None,
    context: str | None,
    lease_name: str,
    lease_namespace: str,
    bind_address: str,
    port: int,
) -> None:
    import threading

    from harmonic.cli import _transport
    from harmonic.cluster.events import EventRecorder
    from harmonic.cluster.health import HealthServer
    from harmonic.cluster.informer import wait_for_sync
    from harmonic.cluster.leader import LeaderElector, default_identity
    from harmonic.cluster.services import StorageInformers, profile_uses_service
    from harmonic.cluster.stopsignal import StopOnSignal
    from harmonic.cluster.transport import ApiStatusError, TransportError
    from harmonic.framework.config import LeaderElection
    from harmonic.framework.services import VOLUMES
    from harmonic.plugins.registry import default_registry
    from harmonic.rescheduler.cache import ClusterCache
    from harmonic.rescheduler.live import LiveRescheduler
    from harmonic.rescheduler.providers import METRICS_SERVICE, connect

    cfg = prepared.config
    transport = _transport(cfg, kubeconfig, context, "rescheduler", optional=False, api=prepared.api)
    assert transport is not None
    events = EventRecorder(transport)
    try:
        metrics = connect(policy.metrics, lambda path: transport.request("GET", path))
    except (ApiStatusError, TransportError, ValueError) as err:
        click.echo(f"error: {policy.source}: metricsProviders: {err}", err=True)
        sys.exit(1)
    services: dict[str, Any] = {METRICS_SERVICE: metrics}
    # The what-if's volume plugins read the storage objects: without them no pod with a claim fits anywhere.
    storage = StorageInformers(transport) if profile_uses_service(prof, default_registry(), VOLUMES) else None
    if storage is not None:
        services[VOLUMES.name] = storage.volumes
        for inf in storage.informers.values():
            inf.start()
        if not wait_for_sync(storage.informers, CACHE_SYNC_SECONDS):
            _stop_all(storage.informers)
            click.echo(
                f"error: the storage informers did not sync within {CACHE_SYNC_SECONDS:.0f}s", err=True
            )
            sys.exit(1)
    if once:
        lr = LiveRescheduler(
            transport,
            policy,
            prof,
            default_registry(),
            dry_run=dry_run,
            options=options,
            events=events,
            services=services,
        )
        if metrics.collector is not None:
            metrics.collector.collect()
        events.start()
        report = lr.cycle()
        events.stop()
        metrics.stop()
        if storage is not None:
            _stop_all(storage.informers)
        if report.error:
            click.echo(f"error: {report.error}", err=True)
            sys.exit(1)
        assert report.result is not None
        click.echo(json.dumps(as_json(report.result), indent=2) if as_json_flag else table(report.result))
        for plan, why in report.aborted:
            click.echo(f"plan {plan}: aborted: {why}", err=True)
        for e, why in report.failed:
            click.echo(f"eviction of {e.pod.key} failed: {why}", err=True)
        return
    cache = ClusterCache(transport)
    cache.start()
    if not cache.wait_for_sync(CACHE_SYNC_SECONDS):
        cache.stop()
        click.echo(f"error: the cluster cache did not sync within {CACHE_SYNC_SECONDS:.0f}s", err=True)
        sys.exit(1)
    stop = threading.Event()
    lease = LeaderElection(True, 15.0, 10.0, 2.0, lease_name, lease_namespace)
    leader = LeaderElector(transport, lease, default_identity())
    lr = LiveRescheduler(
        transport,
        policy,
        prof,
        default_registry(),
        interval=every,
        dry_run=dry_run,
        options=options,
        events=events,
        leader=leader,
        cache=cache,
        services=services,
    )
    metrics.start()
    server = HealthServer(bind_address, port, lr.metrics, {"rescheduler": lr.healthz}, {}) if port else None
    if server is not None:
        server.start()
    events.start()
    StopOnSignal(stop.set).install()
    elector = threading.Thread(target=leader.run, args=(stop,), name="lease", daemon=True)
    elector.start()
    lr.run(stop)
    stop.set()
    elector.join(timeout=5)
    events.stop()
    cache.stop()
    if storage is not None:
        _stop_all(storage.informers)
    metrics.stop()
    if server is not None:
        server.stop()
    sys.exit(1 if leader.lost.is_set() else 0)


def _stop_all(informers: Mapping[str, Informer]) -> None:
    for inf in informers.values():
        inf.stop()
