"""The ``harmonic`` command. Thin: each subcommand parses, calls the library, and prints."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harmonic import __version__
from harmonic.cluster.secureport import SecureServing, secure_serving_options
from harmonic.durations import Duration
from harmonic.endpoint import Endpoint, endpoint_options
from harmonic.feedback import MODEL_PATH
from harmonic.feedback.cli import (
    LiveFeedback,
    feedback_options,
    live_feedback,
    model,
    moves_args,
    moves_options,
    rightsizing_args,
    rightsizing_options,
)
from harmonic.framework.config import ConfigError, SchedulerConfiguration, load_config, load_config_file
from harmonic.framework.decisions import DEFAULT_PODS_KEPT
from harmonic.output import emit, output_option
from harmonic.startup import COMMANDS, Command, Prepared

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from harmonic.cluster.transport import Transport
    from harmonic.extender.engine import Extender
    from harmonic.extender.live import LiveCluster
    from harmonic.extender.server import ExtenderServer
    from harmonic.signals.service import GraphService

log = logging.getLogger(__name__)


def _load(config: str | None) -> SchedulerConfiguration:
    from harmonic.plugins.registry import default_registry

    if config is None:
        return load_config(None, default_registry(), source="<default profile>")
    return load_config_file(config, default_registry())


F = TypeVar("F", bound=Callable[..., Any])


def _user_rate(param: click.Parameter, value: float, positive: bool) -> float:
    """--user-rate: a finite number of user actions per second within the topologies' bound."""
    from harmonic.signals.static import check_user_rate

    try:
        check_user_rate(value)
        if positive and value == 0:
            raise ValueError(f"{value!r} must be greater than 0")
    except ValueError as e:
        raise click.BadParameter(str(e), param=param) from None
    return value


def _cluster_options(f: F) -> F:
    """--kubeconfig and --context, shared by the commands that talk to a cluster."""
    f = click.option("--context", default=None, help="kubeconfig context (default: its current-context).")(f)
    return click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False),
        default=None,
        help="kubeconfig file (overrides clientConnection.kubeconfig). Without either: the in-cluster "
        "service account, else $KUBECONFIG or ~/.kube/config.",
    )(f)


def _snapshot_options(f: F) -> F:
    """What a snapshot of a live cluster reads: --kubeconfig/--context, --namespace, --job-duration."""
    f = click.option(
        "--job-duration",
        default="10m",
        show_default=True,
        callback=_duration_arg,
        help="How long each pod of a Job runs in the replay (a snapshot cannot know): a Go duration.",
    )(f)
    f = click.option(
        "-n",
        "--namespace",
        "namespaces",
        multiple=True,
        help="Only the pods and workloads of this namespace (repeatable; default: all). Nodes are all read.",
    )(f)
    return _cluster_options(f)


def _duration_arg(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    from harmonic.framework.config import parse_duration

    try:
        parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    return value


def _decisions_option(f: F) -> F:
    return click.option(
        "--decisions-buffer",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        metavar="N",
        help="Record the last N scheduling decisions (every Filter verdict and Score per node) and serve "
        "them at GET /debug/decisions, for `harmonic ui --url`. 0: not recorded.",
    )(f)


def _log_format_option(f: F) -> F:
    return click.option(
        "--log-format",
        type=click.Choice(["json", "text"]),
        default="json",
        show_default=True,
        help="Log line format.",
    )(f)


def _configure_server_logs(log_format: str) -> None:
    from harmonic import logs

    # A server logs what it does by default (info); -vv adds debug.
    logs.configure(min(logging.getLogger().level, logging.INFO), log_format == "json")


def _transport(
    cfg: SchedulerConfiguration,
    kubeconfig: str | None,
    context: str | None,
    component: str,
    optional: bool,
    api: ApiClient | None = None,
) -> Transport | None:
    """The API-server transport from --kubeconfig, clientConnection (kubeconfig, qps, burst), the
    in-cluster service account or $KUBECONFIG/~/.kube/config; exits 1 naming the cause if the
    configuration found cannot be loaded. ``optional``: None when there is no configuration at all.
    ``api``: the client ``startup.prepare`` already loaded from clientConnection.kubeconfig."""
    from harmonic.cluster.transport import ClientConfigError, Transport, cluster_config_found, load_client

    path = kubeconfig or cfg.client_connection.kubeconfig or None
    if path is None and optional and not cluster_config_found():
        return None
    try:
        return Transport(
            api or load_client(path, context),
            qps=cfg.client_connection.qps,
            burst=cfg.client_connection.burst,
            user_agent=f"harmonic/{__version__} ({component})",
        )
    except ClientConfigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)


_VERBOSITY = re.compile(r"-v+|--verbose|--?v=(\d+)")


class _Main(click.Group):
    """kubectl, kube-scheduler and descheduler take ``-v`` anywhere on the line, and klog's ``-v=N`` /
    ``--v=N``: those are moved before the subcommand (``--v=N``: 1 to 3 is ``-v``, 4 and up ``-vv``, as
    klog's levels 4+ are debug)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        front: list[str] = []
        rest: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                rest += args[i:]
                break
            m = _VERBOSITY.fullmatch(arg)
            if m is None:
                rest.append(arg)
            elif m.group(1) is None:
                front.append(arg)
            elif int(m.group(1)) > 0:
                front.append("-vv" if int(m.group(1)) >= 4 else "-v")
        return super().parse_args(ctx, [*front, *rest])


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harmonic")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="More log output (-v info, -vv debug); anywhere on the line, or --v=N.",
)
def main(verbose: int) -> None:
    """Harmonic: a Kubernetes scheduler with kube-scheduler's decisions, plus application harmony."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--config",
    "configs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="KubeSchedulerConfiguration file (repeatable); each profile runs side by side. "
    "Default: kube-scheduler's default profile and the bundled profiles.",
)
@click.option(
    "--topology",
    "topologies",
    multiple=True,
    help="Application topology (bundled name or JSON file) to add; without SCENARIO it runs on the "
    "bundled cluster alone.",
)
@click.option(
    "--user-rate",
    type=float,
    callback=lambda ctx, param, v: _user_rate(param, v, positive=True),
    default=10.0,
    show_default=True,
    help="User actions per second for --topology.",
)
@click.option("--out", "out_dir", default="harmonic-report", show_default=True, help="Report folder.")
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option(
    "--seeds",
    metavar="SEEDS",
    help="Sweep: run once per seed (e.g. 1-10 or 1,3,7) and summarise each metric's mean and 95%% CI "
    "into OUT/sweep.json.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Sweep: parallel (seed, profile) runs. Default: the machine's cores.",
)
@click.option(
    "--executor",
    "executor_name",
    type=click.Choice(["local", "dask", "ray"]),
    default="local",
    show_default=True,
    help="Sweep: where runs execute (dask and ray need the harmonic[dask] / harmonic[ray] extra).",
)
@click.option(
    "--address", help="Sweep: the Dask scheduler or Ray cluster address (default: start one locally)."
)
@click.option(
    "--metric",
    "metric_patterns",
    multiple=True,
    help="Sweep: only print metrics matching this pattern (repeatable, e.g. 'cross_*').",
)
@click.option(
    "--from-cluster",
    is_flag=True,
    help="Replay the live cluster: take a snapshot (as `harmonic snapshot` does, written to "
    "OUT/snapshot.yaml) and simulate it instead of SCENARIO.",
)
@_snapshot_options
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@output_option(
    ("json", "yaml"), json_help="Same as -o json: metrics.json (sweep.json) on stdout, the table on stderr."
)
@click.option(
    "--record-decisions",
    type=click.IntRange(min=1),
    is_flag=False,
    flag_value=DEFAULT_PODS_KEPT,
    default=None,
    metavar="[=PODS]",
    help="Also write OUT/decisions.msgpack (each pod's latest scheduling decision: Filter verdicts and "
    f"Score plugin scores per node; for the last {DEFAULT_PODS_KEPT:,} pods decided per profile unless "
    "=PODS says otherwise), OUT/pending.json and OUT/graph.json (the affinity graph over time), for "
    "`harmonic ui --report OUT`.",
)
def simulate(
    scenario: str | None,
    configs: tuple[str, ...],
    topologies: tuple[str, ...],
    user_rate: float,
    out_dir: str,
    seed: int | None,
    seeds: str | None,
    jobs: int | None,
    executor_name: str,
    address: str | None,
    metric_patterns: tuple[str, ...],
    from_cluster: bool,
    kubeconfig: str | None,
    context: str | None,
    namespaces: tuple[str, ...],
    job_duration: str,
    no_progress: bool,
    output: str | None,
    record_decisions: int | None,
) -> None:
    """Replay SCENARIO (default: the bundled multi-zone scenario) under each profile side by side.

    Prints a side-by-side table and writes OUT/metrics.json and OUT/report.html. With --seeds, runs the
    scenario once per seed and profile (independent processes) and prints and writes OUT/sweep.json:
    each metric's mean ± 95% confidence interval, and each profile paired with the default profile.
    """
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.errors import ScenarioError
    from harmonic.sim.outdir import OutDirError, check_writable
    from harmonic.sim.report import format_table
    from harmonic.sim.run import prepare, write
    from harmonic.sim.run import simulate as run_simulation

    registry = default_registry()
    if from_cluster:
        if scenario is not None:
            click.echo("error: give SCENARIO or --from-cluster, not both", err=True)
            sys.exit(1)
        scenario = _write_snapshot(
            kubeconfig, context, namespaces, job_duration, Path(out_dir) / "snapshot.yaml"
        )
    elif kubeconfig or context or namespaces:
        click.echo("error: --kubeconfig, --context and --namespace apply to --from-cluster", err=True)
        sys.exit(1)
    if seeds is not None:
        if seed is not None:
            click.echo("error: --seed and --seeds: give one", err=True)
            sys.exit(1)
        if record_decisions:
            click.echo("error: --record-decisions records one run; it does not apply to --seeds", err=True)
            sys.exit(1)
        request = _SweepRequest(seeds, jobs, executor_name, address, metric_patterns)
        _sweep(scenario, configs, topologies, user_rate, out_dir, request, no_progress, output)
        return
    if jobs is not None or address is not None or executor_name != "local" or metric_patterns:
        click.echo("error: --jobs, --executor, --address and --metric apply to a sweep (--seeds)", err=True)
        sys.exit(1)
    try:
        plan, runs = prepare(scenario, configs, registry, topologies, user_rate, seed)
        check_writable(out_dir)
    except (ScenarioError, ConfigError, OutDirError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    names = ", ".join(r.name for r in runs)
    click.echo(
        f"scenario {plan.name} ({plan.source}): {len(plan.nodes)} nodes, "
        f"{len(plan.timeline)} actions; profiles: {names}",
        err=True,
    )
    total = len(plan.timeline) * len(runs)
    with click.progressbar(
        length=max(total, 1), label="simulating", file=sys.stderr, hidden=no_progress
    ) as bar:
        outcome = run_simulation(
            plan, runs, registry, None, lambda _name, n: bar.update(n), record_decisions=record_decisions
        )
    # with -o, stdout is the document alone; the table still shows, on stderr
    click.echo(format_table(outcome.metrics), err=output is not None)
    try:
        write(out_dir, outcome)
    except OSError as e:
        # The folder was writable when the run began; the table above is the run's result all the same.
        click.echo(f"error: --out {out_dir}: cannot write the report: {e.strerror or e}", err=True)
        sys.exit(1)
    click.echo(f"report: {out_dir}/report.html, metrics: {out_dir}/metrics.json", err=True)
    if record_decisions:
        click.echo(
            f"decisions: {out_dir}/decisions.msgpack, graph: {out_dir}/graph.json "
            f"(explore them: harmonic ui --report {out_dir})",
            err=True,
        )
    if output is not None:
        emit(outcome.metrics, output)


def _take_snapshot(
    kubeconfig: str | None, context: str | None, namespaces: tuple[str, ...], job_duration: str
) -> str:
    """The live cluster as scenario YAML; each warning also on stderr."""
    from datetime import UTC, datetime

    from harmonic.cluster.listing import read_cluster
    from harmonic.cluster.transport import ApiStatusError, TransportError
    from harmonic.sim.snapshot import build, render

    transport = _transport(_load(None), kubeconfig, context, "snapshot", optional=False)
    assert transport is not None
    try:
        listing = read_cluster(transport, namespaces)
    except (ApiStatusError, TransportError) as e:
        click.echo(f"error: reading the cluster at {transport.host}: {e}", err=True)
        sys.exit(1)
    taken = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    where = f"{transport.host} (context {context})" if context else transport.host
    snap = build(
        listing,
        name=f"snapshot-{taken}",
        description=f"The cluster at {where}, {taken}",
        job_duration=job_duration,
    )
    header = [
        f"Taken by `harmonic snapshot` (harmonic {__version__}) at {taken} from {where};",
        "namespaces: "
        + (", ".join(namespaces) if namespaces else "all")
        + (" (pods of other namespaces are not on these nodes here)" if namespaces else "")
        + ".",
        f"{len(listing.of('Node'))} nodes; {snap.bound} pods bound (created on their nodes: bare pods by "
        "spec.nodeName, workloads' by placement), "
        f"{snap.pending} pending (queued for each profile).",
        "Server-set fields, node annotations and schedulerName removed (every profile schedules every pod); "
        f"each Job pod runs {job_duration} (--job-duration: a snapshot cannot know).",
    ]
    if listing.not_served:
        header.append(
            "not served by this API server (404), so none read: " + ", ".join(listing.not_served) + "."
        )
    for w in snap.warnings():
        click.echo(f"warning: {w}", err=True)
    return render(snap, header)


def _write_snapshot(
    kubeconfig: str | None, context: str | None, namespaces: tuple[str, ...], job_duration: str, path: Path
) -> str:
    text = _take_snapshot(kubeconfig, context, namespaces, job_duration)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    click.echo(f"snapshot: {path}", err=True)
    return str(path)


@main.command()
@_snapshot_options
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    show_default=True,
    help="Write the scenario to FILE ('-': stdout).",
)
def snapshot(
    kubeconfig: str | None, context: str | None, namespaces: tuple[str, ...], job_duration: str, output: str
) -> None:
    """Write the live cluster as a scenario that `harmonic simulate FILE` replays under every profile.

    Reads nodes (labels, taints, cordon, allocatable), pods, Deployments, ReplicaSets, StatefulSets,
    DaemonSets, Jobs, Services, PodDisruptionBudgets, PriorityClasses, and PodGroups/ElasticQuotas where
    their CRDs are installed. Running pods start on the node they run on now; pending pods are queued.
    The header says when and from where it was taken, and what was left out (also on stderr).
    """
    if output == "-":
        click.echo(_take_snapshot(kubeconfig, context, namespaces, job_duration), nl=False)
    else:
        _write_snapshot(kubeconfig, context, namespaces, job_duration, Path(output))


@dataclass(frozen=True)
class _SweepRequest:
    """What ``simulate --seeds`` adds to a simulation's options."""

    seeds: str
    jobs: int | None
    executor: str
    address: str | None
    metrics: tuple[str, ...]


def _sweep(
    scenario: str | None,
    configs: tuple[str, ...],
    topologies: tuple[str, ...],
    user_rate: float,
    out_dir: str,
    req: _SweepRequest,
    no_progress: bool,
    output: str | None,
) -> None:
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.errors import ScenarioError
    from harmonic.sim.outdir import check_writable
    from harmonic.sim.sweep import (
        ExecutorUnavailable,
        SeedSpecError,
        executor,
        format_sweep_table,
        parse_seeds,
        prepare_sweep,
        sweep,
        write_sweep,
    )

    try:
        seeds = parse_seeds(req.seeds)
        plans, runs = prepare_sweep(scenario, configs, default_registry(), seeds, topologies, user_rate)
        check_writable(out_dir)
        ex = executor(req.executor, req.jobs, req.address)
    except (ScenarioError, ConfigError, SeedSpecError, ValueError, ExecutorUnavailable) as e:
        where = "--seeds: " if isinstance(e, SeedSpecError) else ""
        click.echo(f"error: {where}{e}", err=True)
        sys.exit(1)
    plan = next(iter(plans.values()))
    names = ", ".join(r.name for r in runs)
    click.echo(
        f"scenario {plan.name} ({plan.source}): {len(seeds)} seeds x profiles {names}; "
        f"executor {req.executor}",
        err=True,
    )
    try:
        with click.progressbar(
            length=len(seeds) * len(runs), label="runs", file=sys.stderr, hidden=no_progress
        ) as bar:
            doc = sweep(plans, runs, ex, lambda _r: bar.update(1))
    except ExecutorUnavailable as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    click.echo(format_sweep_table(doc, req.metrics or None), err=output is not None)
    try:
        path = write_sweep(out_dir, doc)
    except OSError as e:
        click.echo(f"error: --out {out_dir}: cannot write sweep.json: {e.strerror or e}", err=True)
        sys.exit(1)
    click.echo(f"sweep: {path}", err=True)
    if output is not None:
        emit(doc, output)


def _http_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An http(s) URL with a host, checked before any source is built (httpx would raise mid-read)."""
    if value is None:
        return None
    import httpx

    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as e:
        raise click.BadParameter(f"{value!r} is not a valid URL: {e}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise click.BadParameter(f"{value!r} is not an http:// or https:// URL with a host")
    return value


@main.command()
@click.option(
    "--prometheus",
    "prometheus_url",
    metavar="URL",
    callback=_http_url,
    help="Prometheus server to read mesh metrics from.",
)
@click.option("--mesh", type=click.Choice(["istio", "linkerd"]), default="istio", show_default=True)
@click.option("--reporter", type=click.Choice(["source", "destination"]), default="source", show_default=True)
@click.option("--window", default="5m", show_default=True, help="PromQL rate() window.")
@click.option(
    "--topology",
    "topologies",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Topology JSON file (repeatable).",
)
@click.option(
    "--namespace", default="default", show_default=True, help="Namespace of the topology's workloads."
)
@click.option(
    "--user-rate",
    type=float,
    callback=lambda ctx, param, v: _user_rate(param, v, positive=False),
    default=1.0,
    show_default=True,
    help="User actions/s for topologies.",
)
@click.option(
    "--appgroup",
    "appgroups",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="AppGroup YAML file (repeatable).",
)
@click.option(
    "--weight-by", type=click.Choice(["requests", "bytes", "both"]), default="requests", show_default=True
)
@click.option(
    "--top",
    "top_n",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many edges to print.",
)
@click.option("--workload", help="Explain one workload (namespace/name): its peers and their shares.")
@output_option(json_help="Same as -o json: the whole graph.")
def graph(
    prometheus_url: str | None,
    mesh: str,
    reporter: str,
    window: str,
    topologies: tuple[str, ...],
    namespace: str,
    user_rate: float,
    appgroups: tuple[str, ...],
    weight_by: str,
    top_n: int,
    workload: str | None,
    output: str | None,
) -> None:
    """Build the affinity graph once from telemetry and print its strongest edges (-o wide: every
    edge, with its weight; -o json|yaml: the whole graph)."""
    from harmonic.api.errors import ObjectError
    from harmonic.signals.graph import AffinityGraph, WeightBy
    from harmonic.signals.identity import WorkloadKey
    from harmonic.signals.prometheus import PrometheusSource
    from harmonic.signals.static import AppGroupSource, TopologySource, load_topology
    from harmonic.signals.telemetry import TelemetrySource

    sources: list[TelemetrySource] = []
    try:
        if prometheus_url:
            sources.append(PrometheusSource(prometheus_url, mesh=mesh, reporter=reporter, window=window))
        sources += [TopologySource(load_topology(t), namespace, user_rate) for t in topologies]
        sources += [AppGroupSource.from_file(a) for a in appgroups]
    except (ObjectError, ValueError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if not sources:
        raise click.UsageError("give at least one of --prometheus, --topology, --appgroup")
    g = AffinityGraph(weight_by=WeightBy(weight_by))
    for r, src in zip(g.refresh(sources, now=0.0), sources, strict=True):
        if not r.ok:
            click.echo(f"warning: {src.name}: no signal: {r.reason}", err=True)
        for s in r.skipped[:5]:
            click.echo(f"warning: {src.name}: skipped {s}", err=True)
    empty = "error: the graph is empty: no source gave a signal"
    if output in ("json", "yaml"):
        # The document is printed either way (it says what was read); an empty graph still fails.
        emit(g.to_json(), output)
        if not g.edges():
            click.echo(empty, err=True)
            sys.exit(1)
        return
    if workload:
        click.echo(json.dumps(g.explain(WorkloadKey.parse(workload, namespace)), indent=2))
        return
    edges = g.top_edges(len(g.edges()) if output == "wide" else top_n)
    if not edges:
        click.echo(empty, err=True)
        sys.exit(1)
    width = max(len(edge["src"]) for edge in edges)
    click.echo(f"affinity graph v{g.version}: {len(g.edges())} edges; top {len(edges)} by {weight_by}")
    for edge in edges:
        wide = f"  weight {edge['weight']:.3g}" if output == "wide" else ""
        click.echo(
            f"  {edge['src']:<{width}} -> {edge['dst']}  {edge['requests_per_second']:.3g} req/s  {edge['bytes_per_second']:.3g} B/s{wide}"
        )


@main.command()
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1). Its profiles' schedulerNames are "
    "the pods' spec.schedulerName values this scheduler takes; its leaderElection and clientConnection "
    "(kubeconfig, qps, burst) are honoured.",
)
@_cluster_options
@secure_serving_options
@click.option("--identity", default=None, help="Leader-election identity (default: hostname_uuid).")
@_log_format_option
@click.option(
    "--sync-timeout",
    type=Duration(),
    default=None,
    help="Exit 1 if the informers have not listed everything within this time, a Go duration or seconds "
    "(default: wait).",
)
@_decisions_option
@feedback_options
@rightsizing_options
@moves_options
def run(
    config_path: str,
    kubeconfig: str | None,
    context: str | None,
    secure_serving: SecureServing,
    identity: str | None,
    log_format: str,
    sync_timeout: float | None,
    decisions_buffer: int,
    feedback_token_file: str | None,
    feedback_prometheus: str | None,
    feedback_interval: float,
    feedback_rightsizing: bool,
    feedback_rightsizing_interval: float,
    feedback_rightsizing_args: str | None,
    feedback_moves: bool,
    feedback_moves_args: str | None,
) -> None:
    """Schedule a cluster's pods whose spec.schedulerName names one of the profiles (a secondary scheduler).

    Watches nodes, pods, PodDisruptionBudgets, namespaces, and the selectors of Services,
    ReplicationControllers, ReplicaSets and StatefulSets; binds through pods/binding; writes
    Scheduled / FailedScheduling events and the PodScheduled condition; takes the leaderElection lease
    before scheduling (several replicas: one schedules, the others stand by). Stops cleanly on SIGTERM
    (finishes in-flight bindings, releases the lease); exits 1 if the lease is lost.
    """
    from harmonic.cluster.health import HealthServer, PostRoute, Route
    from harmonic.cluster.kube import LiveScheduler, tune_process
    from harmonic.cluster.stopsignal import StopOnSignal
    from harmonic.framework.decisions import DecisionLog
    from harmonic.framework.decisions import endpoint as decisions_endpoint
    from harmonic.framework.services import MissingServiceError
    from harmonic.plugins.registry import default_registry
    from harmonic.signals.feedback.intake import PATH as FEEDBACK_PATH
    from harmonic.signals.feedback.placement import PlacementView
    from harmonic.signals.metrics import FRESHNESS
    from harmonic.signals.metrics import exposition as signals_exposition

    _configure_server_logs(log_format)
    prepared = _prepare(config_path, "run", kubeconfig, context)
    cfg, graphs = prepared.config, prepared.graphs
    transport = _transport(cfg, kubeconfig, context, "scheduler", optional=False, api=prepared.api)
    assert transport is not None
    usage = _usage_services(cfg, transport)
    tune_process()
    fb = live_feedback(cfg, _read_token(feedback_token_file), feedback_prometheus, feedback_interval)
    if feedback_rightsizing:
        if fb is None:
            click.echo(
                "error: --feedback-rightsizing needs reports: --feedback-token-file or --feedback-prometheus",
                err=True,
            )
            sys.exit(1)
        fb.enable_rightsizing(
            transport,
            feedback_prometheus,
            feedback_rightsizing_interval,
            rightsizing_args(feedback_rightsizing_args),
        )
    if feedback_moves and fb is None:
        click.echo(
            "error: --feedback-moves needs reports: --feedback-token-file or --feedback-prometheus", err=True
        )
        sys.exit(1)
    move_args = moves_args(feedback_moves_args) if feedback_moves else None
    services: dict[str, Any] = {**graphs, **usage, **(fb.services if fb else {})}
    try:
        live = LiveScheduler(cfg, default_registry(), transport, identity=identity, services=services)
    except MissingServiceError as e:
        click.echo(f"error: {config_path}: {e}", err=True)
        sys.exit(1)
    if fb is not None and move_args is not None:
        fb.enable_moves(live, move_args)
    routes: dict[str, Route] = {}
    post_routes: dict[str, PostRoute] = {}
    if decisions_buffer:
        decisions = live.scheduler.decisions = DecisionLog(decisions_buffer)
        routes["/debug/decisions"] = lambda q: (*decisions_endpoint(decisions, q), "application/json")
    if fb is not None:
        routes[MODEL_PATH] = fb.model_route
        if fb.intake is not None:
            post_routes[FEEDBACK_PATH] = fb.post_route
    server = None
    if secure_serving.port:
        bind, port = secure_serving.bind_address, secure_serving.port
        try:
            tls, auth = secure_serving.build(transport)
        except ValueError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        try:
            server = HealthServer(
                bind,
                port,
                lambda: live.metrics.exposition() + signals_exposition(),
                live.health_checks(),
                live.ready_checks(),
                routes,
                post_routes,
                notes=FRESHNESS.notes,
                tls=tls,
                auth=auth,
            )
        except OSError as e:
            click.echo(f"error: cannot listen on {bind}:{port}: {e.strerror}", err=True)
            sys.exit(1)
        server.start()
        log.info("serving securely", extra={"address": f"https://{bind}:{server.port}"})
    StopOnSignal(live.stop).install()
    for svc in [*graphs.values(), *usage.values()]:
        svc.start()
    if fb is not None:
        sched = live.scheduler
        fb.start(
            lambda fn: sched.post(
                lambda: fn(PlacementView(sched.cache.snapshot, [q.pod for q in sched.queue.pending_pods()]))
            )
        )
    try:
        code = live.run(sync_timeout)
    finally:
        for svc in [*graphs.values(), *usage.values()]:
            svc.stop()
        if fb is not None:
            fb.stop()
    if server is not None:
        server.stop()
    sys.exit(code)


def _prepare(
    config_path: str | None, command: Command, kubeconfig: str | None, context: str | None
) -> Prepared:
    """The configuration, graph services and API client ``command`` starts with (``harmonic.startup``,
    the checks ``config check --for`` reports); exits 1 with one line naming the problem."""
    from harmonic.startup import prepare

    try:
        return prepare(config_path, command, kubeconfig, context)
    except ConfigError as e:
        click.echo(f"error: {' '.join(str(e).split())}", err=True)
        sys.exit(1)


def _usage_services(cfg: SchedulerConfiguration, transport: Any) -> dict[str, Any]:
    """The usage model the configuration's load-aware plugins read (exit 1 naming the problem when
    their metricProvider args disagree)."""
    from harmonic.plugins.usage_setup import usage_services

    try:
        return usage_services(cfg, lambda path: transport.request("GET", path))
    except ConfigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)


def _read_token(path: str | None) -> str | None:
    """The token in ``path`` (stripped); exits 1 naming the file when it is unreadable or empty."""
    from pathlib import Path

    if path is None:
        return None
    try:
        token = Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError) as e:
        click.echo(f"error: {path}: cannot read: {getattr(e, 'strerror', None) or e}", err=True)
        sys.exit(1)
    if not token:
        click.echo(f"error: {path}: the token file is empty", err=True)
        sys.exit(1)
    return token


@main.command()
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    help="Simulation report folder written by `harmonic simulate --record-decisions --out DIR`.",
)
@click.option(
    "--url",
    help="A running `harmonic run` (its --secure-port, e.g. https://127.0.0.1:10259) or `harmonic "
    "extender` started with --decisions-buffer N.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Loopback port.")
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False),
    help="Require this bearer token (read from the file) on every page; open the printed URL to log in.",
)
@endpoint_options
def ui(
    report_dir: str | None, url: str | None, port: int, token_file: str | None, endpoint: Endpoint
) -> None:
    """Explore scheduling decisions in the browser: each pod's Filter verdicts and Score plugin scores
    per node, pending pods by reason, the affinity graph over time, and the simulation's metrics.

    Serves on 127.0.0.1 only. Give exactly one of --report and --url.
    """
    from harmonic.ui.app import create_app
    from harmonic.ui.server import UIServer
    from harmonic.ui.sources import LiveSource, ReportSource, Source, SourceError

    if (report_dir is None) == (url is None):
        raise click.UsageError("give exactly one of --report DIR and --url URL")
    token = _read_token(token_file)
    source: Source
    try:
        source = (
            ReportSource(report_dir)
            if report_dir is not None
            else LiveSource(url or "", endpoint.token, verify=endpoint.verify)
        )
        source.info()
    except SourceError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    try:
        server = UIServer(create_app(source, token), port)
    except OSError as e:
        click.echo(f"error: cannot listen on 127.0.0.1:{port}: {e.strerror}", err=True)
        sys.exit(1)
    click.echo(f"decision explorer: {server.url}/{'?token=' + token if token else ''}", err=True)
    server.run()


@main.group()
def config() -> None:
    """Inspect KubeSchedulerConfiguration files."""


@config.command("check")
@click.argument("path")
@click.option(
    "--for",
    "command",
    type=click.Choice(COMMANDS),
    default="run",
    show_default=True,
    help="The command PATH is for: checked exactly as that command checks it before starting.",
)
def config_check(path: str, command: Command) -> None:
    """Validate PATH as `harmonic COMMAND --config PATH` would; print one clear error line and exit 1
    if that command would refuse it."""
    cfg = _prepare(path, command, None, None).config
    names = ", ".join(p.scheduler_name for p in cfg.profiles)
    click.echo(f"{path}: valid, profiles: {names}")
    # Plugins made from the config (WebAssembly guests): what was loaded and where it plugs in.
    for p in cfg.profiles:
        for plugin, cls in p.plugin_classes.items():
            describe = getattr(cls, "describe", None)
            click.echo(f"  {p.scheduler_name}: {plugin}: {describe() if describe else cls.__qualname__}")


@config.command("show")
@click.argument("path", required=False)
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default=None, help="Output format.")
def config_show(path: str | None, output: str | None) -> None:
    """Print the resolved profiles of PATH (or the default profile): plugins per extension point,
    score weights and args after defaulting. -o yaml|json: the whole KubeSchedulerConfiguration with
    every default filled in, loadable as it is (as kube-scheduler's --write-config-to)."""
    try:
        cfg = _load(path)
    except ConfigError as e:
        click.echo(f"error: {' '.join(str(e).split())}", err=True)
        sys.exit(1)
    if output is not None:
        from harmonic.framework.config_writer import to_v1

        emit(to_v1(cfg), output)
        return
    out: dict[str, Any] = {
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "profiles": [
            {
                "schedulerName": p.scheduler_name,
                "plugins": {k: list(v) for k, v in p.points.items() if v},
                "weights": dict(p.weights),
                "args": {k: v.model_dump(mode="json", by_alias=True) for k, v in p.args.items()},
            }
            for p in cfg.profiles
        ],
    }
    click.echo(json.dumps(out, indent=2))


@main.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="KubeSchedulerConfiguration whose profile answers (default: kube-scheduler's default profile).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8888, show_default=True)
@click.option(
    "--bind-address",
    "--bind",
    "bind_address",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (--bind: the older name).",
)
@click.option("--prefix", default="/scheduler", show_default=True, help="URL path before the verbs.")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="Serve HTTPS with this cert.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="Private key of --tls-cert.")
@click.option(
    "--tls-client-ca",
    type=click.Path(exists=True, dir_okay=False),
    help="Require client certificates signed by this CA (how kube-scheduler authenticates to extenders).",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False),
    help="Require 'Authorization: Bearer <token>' on the verbs, the token read from this file.",
)
@click.option(
    "--profile", default=None, help="Profile to evaluate every pod with (default: by schedulerName)."
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1024),
    default=64 << 20,
    show_default=True,
    help="Larger request bodies are refused with 413.",
)
@_cluster_options
@_log_format_option
@_decisions_option
@feedback_options
def extender(
    config_path: str | None,
    port: int,
    bind_address: str,
    prefix: str,
    tls_cert: str | None,
    tls_key: str | None,
    tls_client_ca: str | None,
    token_file: str | None,
    profile: str | None,
    max_body_bytes: int,
    kubeconfig: str | None,
    context: str | None,
    log_format: str,
    decisions_buffer: int,
    feedback_token_file: str | None,
    feedback_prometheus: str | None,
    feedback_interval: float,
) -> None:
    """Serve kube-scheduler's extender v1 protocol (filter, prioritize, preempt, bind).

    With cluster access (--kubeconfig, clientConnection.kubeconfig, the in-cluster service account,
    $KUBECONFIG or ~/.kube/config) it watches nodes, pods, PodDisruptionBudgets, namespaces and the
    workload objects default topology spreading reads (Services, ReplicationControllers, ReplicaSets,
    StatefulSets), answers both nodeCacheCapable modes from that cache (/readyz is 503 until it has synced) and binds through
    pods/binding. With none of them it answers nodeCacheCapable: false requests only, from the nodes in
    each request (and no pods), and cannot bind. See docs/extender.md.
    """

    from harmonic.extender.server import ExtenderApp, ExtenderServer, ServerSettings, TLSSettings

    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if tls_client_ca and not tls_cert:
        raise click.UsageError("--tls-client-ca needs --tls-cert and --tls-key")
    tls = TLSSettings(tls_cert, tls_key, tls_client_ca) if tls_cert and tls_key else None
    if tls is not None:
        try:
            tls.check()
        except ValueError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
    fb_token = _read_token(feedback_token_file)
    ext, live, graphs, fb = _extender_setup(
        config_path,
        profile,
        kubeconfig,
        context,
        decisions_buffer,
        (fb_token, feedback_prometheus, feedback_interval),
    )
    token = _read_token(token_file)
    _configure_server_logs(log_format)
    app = ExtenderApp(
        ext,
        ServerSettings(prefix=prefix, max_body_bytes=max_body_bytes, token=token),
        feedback=fb.intake if fb else None,
        model=fb.model_route if fb else None,
    )
    try:
        server = ExtenderServer(app, bind=bind_address, port=port, tls=tls)
    except OSError as e:
        click.echo(f"error: cannot listen on {bind_address}:{port}: {e.strerror}", err=True)
        sys.exit(1)
    url = f"{server.url}{'/' + prefix.strip('/') if prefix.strip('/') else ''}"
    _extender_run(server, ext, live, graphs, fb, url)


def _extender_setup(
    config_path: str | None,
    profile: str | None,
    kubeconfig: str | None,
    context: str | None,
    decisions: int,
    feedback: tuple[str | None, str | None, float],
) -> tuple[Extender, LiveCluster | None, dict[str, GraphService], LiveFeedback | None]:
    """Setup, as kube-scheduler's app.Setup: the configuration, the cluster cache when there is cluster
    access, the graph services, and the extender over them; a bad configuration exits 1 with one line."""
    from harmonic.cluster.services import uses_batch_plugins, uses_service
    from harmonic.extender.engine import Extender
    from harmonic.extender.live import LiveCluster
    from harmonic.framework.services import VOLUMES
    from harmonic.plugins.registry import default_registry

    prepared = _prepare(config_path, "extender", kubeconfig, context)
    cfg, graphs = prepared.config, prepared.graphs
    transport = _transport(cfg, kubeconfig, context, "extender", optional=True, api=prepared.api)
    live = (
        LiveCluster(
            transport, batch=uses_batch_plugins(cfg), storage=uses_service(cfg, default_registry(), VOLUMES)
        )
        if transport is not None
        else None
    )
    fb = live_feedback(cfg, *feedback)
    try:
        ext = Extender(
            cfg,
            default_registry(),
            profile=profile,
            cache=live.cache if live else None,
            client=live.client if live else None,
            services={**(live.services if live else {}), **graphs, **(fb.services if fb else {})},
        )
    except ValueError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if decisions:
        from harmonic.framework.decisions import DecisionLog

        ext.decisions = DecisionLog(decisions)
    return ext, live, graphs, fb


def _extender_run(
    server: ExtenderServer,
    ext: Extender,
    live: LiveCluster | None,
    graphs: Mapping[str, GraphService],
    fb: LiveFeedback | None,
    url: str,
) -> None:
    """Run, as kube-scheduler's app.Run: start the cache, the graph services and the feedback loop,
    serve until stopped."""
    if live is None:
        log.warning(
            "no cluster configuration (--kubeconfig, clientConnection.kubeconfig, in-cluster service "
            "account, $KUBECONFIG or ~/.kube/config): no cluster cache. Answering nodeCacheCapable: false "
            "requests only, from the nodes each request carries, with no pods on them; bind is refused",
            extra={"url": url, "mode": "request-nodes"},
        )
    else:
        log.info(
            "cluster cache: watching nodes, pods, PodDisruptionBudgets, namespaces, services, "
            "replicationcontrollers, replicasets and statefulsets; "
            "/readyz answers 503 until they have synced",
            extra={"url": url, "mode": "cluster-cache", "server": live.transport.host},
        )
        live.start()
    log.info("serving the extender verbs", extra={"url": url})
    for graph in graphs.values():
        graph.start()
    if fb is not None:
        fb.start(ext.on_state)
    try:
        server.run()
    finally:
        for graph in graphs.values():
            graph.stop()
        if fb is not None:
            fb.stop()
        if live is not None:
            live.stop()
        log.info("stopped", extra={"url": url})


def _add_reschedule() -> None:
    from harmonic.rescheduler.cli import reschedule

    main.add_command(reschedule)


_add_reschedule()
main.add_command(model)

if __name__ == "__main__":
    main()
