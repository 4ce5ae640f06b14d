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
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="User actions per second for --topology.",
)
@click.option("--out", "out_dir", default="harmonic-report", show_default=True, help="Report folder.")
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Also print metrics.json to stdout.")
def simulate(
    scenario: str | None,
    configs: tuple[str, ...],
    topologies: tuple[str, ...],
    user_rate: float,
    out_dir: str,
    seed: int | None,
    no_progress: bool,
    as_json: bool,
) -> None:
    """Replay SCENARIO (default: the bundled multi-zone scenario) under each profile side by side.

    Prints a side-by-side table and writes OUT/metrics.json and OUT/report.html.
    """
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.errors import ScenarioError
    from harmonic.sim.report import format_table
    from harmonic.sim.run import prepare
    from harmonic.sim.run import simulate as run_simulation

    registry = default_registry()
    try:
        plan, runs = prepare(scenario, configs, registry, topologies, user_rate, seed)
    except (ScenarioError, ConfigError) as e:
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
        outcome = run_simulation(plan, runs, registry, out_dir, lambda _name, n: bar.update(n))
    click.echo(format_table(outcome.metrics))
    click.echo(f"report: {out_dir}/report.html, metrics: {out_dir}/metrics.json", err=True)
    if as_json:
        click.echo(json.dumps(outcome.metrics, indent=2))


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


@main.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="KubeSchedulerConfiguration whose profile answers (default: kube-scheduler's default profile).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8888, show_default=True)
@click.option("--bind", "bind_address", default="127.0.0.1", show_default=True, help="Address to listen on.")
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
) -> None:
    """Serve kube-scheduler's extender v1 protocol (filter, prioritize, preempt, bind).

    Without cluster access the extender answers nodeCacheCapable: false requests only, from the nodes
    in each request (and no pods); see the README section "Plug into kube-scheduler as an extender".
    """
    from pathlib import Path

    from harmonic.extender.engine import Extender
    from harmonic.extender.server import ExtenderApp, ExtenderServer, ServerSettings, TLSSettings
    from harmonic.plugins.registry import default_registry

    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if tls_client_ca and not tls_cert:
        raise click.UsageError("--tls-client-ca needs --tls-cert and --tls-key")
    try:
        cfg = _load(config_path)
        ext = Extender(cfg, default_registry(), profile=profile)
    except (ConfigError, ValueError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    token = None
    if token_file:
        token = Path(token_file).read_text().strip()
        if not token:
            click.echo(f"error: {token_file}: the token file is empty", err=True)
            sys.exit(1)
    tls = TLSSettings(tls_cert, tls_key, tls_client_ca) if tls_cert and tls_key else None
    app = ExtenderApp(ext, ServerSettings(prefix=prefix, max_body_bytes=max_body_bytes, token=token))
    try:
        server = ExtenderServer(app, bind=bind_address, port=port, tls=tls, log_level="info")
    except OSError as e:
        click.echo(f"error: cannot listen on {bind_address}:{port}: {e.strerror}", err=True)
        sys.exit(1)
    click.echo(f"harmonic extender: serving {server.url}{'/' + prefix.strip('/')}", err=True)
    server.run()


if __name__ == "__main__":
    main()
