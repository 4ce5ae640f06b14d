"""The ``harmonic`` command. Thin: each subcommand parses, calls the library, and prints."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from harmonic import __version__
from harmonic.framework.config import ConfigError, SchedulerConfiguration, load_config, load_config_file


def _load(config: str | None) -> SchedulerConfiguration:
    from harmonic.plugins.registry import default_registry

    if config is None:
        return load_config(None, default_registry(), source="<default profile>")
    return load_config_file(config, default_registry())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harmonic")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Harmonic: a Kubernetes scheduler with kube-scheduler's decisions, plus application harmony."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@click.option(
    "--workload", default="SchedulingBasic", show_default=True, help="scheduler_perf workload to run."
)
@click.option(
    "--nodes", type=click.IntRange(min=1), default=None, help="Nodes (workload default if omitted)."
)
@click.option(
    "--init-pods", type=click.IntRange(min=0), default=None, help="Pods scheduled before measuring."
)
@click.option("--pods", type=click.IntRange(min=0), default=None, help="Measured pods.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object too.")
def simulate(
    workload: str, nodes: int | None, init_pods: int | None, pods: int | None, as_json: bool
) -> None:
    """Run the embedded default scenario.

    Until the simulator lands, this runs the scheduler_perf SchedulingBasic workload (5,000 nodes,
    1,000 initial pods, 10,000 measured pods) against the in-memory cluster and prints its figures.
    """
    from harmonic.perf.cli import format_result
    from harmonic.perf.runner import run_workload
    from harmonic.perf.workloads import WORKLOADS
    from harmonic.plugins.registry import default_registry

    if workload not in WORKLOADS:
        raise click.BadParameter(
            f"unknown workload {workload!r}; one of {', '.join(sorted(WORKLOADS))}", param_hint="--workload"
        )
    factory, (dn, di, dp) = WORKLOADS[workload]
    click.echo(
        "harmonic simulate: running the scheduler_perf benchmark as the embedded default scenario", err=True
    )
    result = run_workload(
        factory(nodes or dn, di if init_pods is None else init_pods, dp if pods is None else pods),
        default_registry(),
    )
    click.echo(format_result(result))
    if as_json:
        click.echo(json.dumps(result.as_dict()))


@main.command()
@click.option(
    "--prometheus", "prometheus_url", metavar="URL", help="Prometheus server to read mesh metrics from."
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
    type=click.FloatRange(min=0),
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
@click.option("--json", "as_json", is_flag=True, help="Print the whole graph as JSON.")
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
    as_json: bool,
) -> None:
    """Build the affinity graph once from telemetry and print its strongest edges."""
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
    if as_json:
        click.echo(json.dumps(g.to_json(), indent=2))
        return
    if workload:
        click.echo(json.dumps(g.explain(WorkloadKey.parse(workload, namespace)), indent=2))
        return
    edges = g.top_edges(top_n)
    if not edges:
        click.echo("the graph is empty: no source gave a signal")
        sys.exit(1)
    width = max(len(edge["src"]) for edge in edges)
    click.echo(f"affinity graph v{g.version}: {len(g.edges())} edges; top {len(edges)} by {weight_by}")
    for edge in edges:
        click.echo(
            f"  {edge['src']:<{width}} -> {edge['dst']}  {edge['requests_per_second']:.3g} req/s  {edge['bytes_per_second']:.3g} B/s"
        )


@main.group()
def config() -> None:
    """Inspect KubeSchedulerConfiguration files."""


@config.command("check")
@click.argument("path", type=click.Path(dir_okay=False))
def config_check(path: str) -> None:
    """Validate PATH; print one clear error line and exit 1 if it is invalid."""
    try:
        cfg = _load(path)
    except ConfigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    names = ", ".join(p.scheduler_name for p in cfg.profiles)
    click.echo(f"{path}: valid, profiles: {names}")


@config.command("show")
@click.argument("path", type=click.Path(dir_okay=False), required=False)
def config_show(path: str | None) -> None:
    """Print the resolved profiles of PATH (or the default profile): plugins per extension point,
    score weights and args after defaulting."""
    try:
        cfg = _load(path)
    except ConfigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
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


if __name__ == "__main__":
    main()
