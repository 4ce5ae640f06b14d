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
