"""``harmonic model`` and the feedback options of ``harmonic run`` / ``harmonic extender``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harmonic import safeyaml
from harmonic.feedback import MODEL_PATH

if TYPE_CHECKING:
    from harmonic.feedback.service import FeedbackService, OnState
    from harmonic.framework.config import SchedulerConfiguration

# The CLI imports this module at start-up: the loop's machinery is imported only when it is used.

F = TypeVar("F", bound=Callable[..., Any])


def feedback_options(f: F) -> F:
    f = click.option(
        "--feedback-interval",
        type=click.FloatRange(min=1),
        default=60.0,
        show_default=True,
        help="Seconds between feedback rounds (reports learnt, model refreshed).",
    )(f)
    f = click.option(
        "--feedback-prometheus",
        metavar="URL",
        default=None,
        help="Prometheus that answers the harmonic.dev/flourish-query annotations of pods.",
    )(f)
    f = click.option(
        "--feedback-token-file",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="Serve POST /v1/feedback, authenticated by the bearer token in this file.",
    )(f)
    return f


def rightsizing_options(f: F) -> F:
    f = click.option(
        "--feedback-rightsizing-args",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="YAML of the right-sizer's guardrails (minCpu, maxStepDown, cooldownSeconds, ...: docs/feedback.md).",
    )(f)
    f = click.option(
        "--feedback-rightsizing-interval",
        type=click.FloatRange(min=1),
        default=300.0,
        show_default=True,
        help="Seconds between right-sizing rounds.",
    )(f)
    f = click.option(
        "--feedback-rightsizing",
        is_flag=True,
        help="Right-size workloads with an SLO (harmonic.dev/flourish-target): resize pods that opted in "
        "(harmonic.dev/resize: auto) through pods/resize, annotate the others with a recommendation.",
    )(f)
    return f


def moves_options(f: F) -> F:
    f = click.option(
        "--feedback-moves-args",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="YAML of the moves' price and budgets (minGain, restartSeconds, cooldownSeconds, maxPerRound, "
        "maxPerNode, ...: docs/feedback.md).",
    )(f)
    f = click.option(
        "--feedback-moves",
        is_flag=True,
        help="Carry out the moves the feedback loop asks for (a pod predicted to flourish elsewhere, an "
        "Infeasible resize): evict one pod through the Eviction API within the rescheduler's budgets and "
        "PodDisruptionBudgets, its replacement nominated to the node reserved for it. Off: the moves are "
        "only reported. A move costs a restart.",
    )(f)
    return f


def rightsizing_args(path: str | None) -> Any:
    """The guardrails from ``path`` (exit 1 naming the file and field when invalid)."""
    from harmonic.feedback.rightsizing import RightSizingArgs

    return args_file(path, RightSizingArgs)


def moves_args(path: str | None) -> Any:
    """The moves' price and budgets from ``path`` (exit 1 naming the file and field when invalid)."""
    from harmonic.feedback.moves_live import MoveArgs

    return args_file(path, MoveArgs)


def args_file(path: str | None, model: Any) -> Any:
    """``model`` validated from the YAML file ``path`` (its defaults without one)."""
    import yaml
    from pydantic import ValidationError

    if path is None:
        return model()
    try:
        doc = safeyaml.load(Path(path).read_text(encoding="utf-8")) or {}
        return model.model_validate(doc)
    except yaml.YAMLError as e:
        click.echo(f"error: {path}: not YAML: {safeyaml.problem(e)}", err=True)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        click.echo(f"error: {path}: {where}: {err['msg']}", err=True)
    sys.exit(1)


class LiveFeedback:
    """The pieces ``harmonic run`` / ``harmonic extender`` wire together when feedback is on: the
    learner (its model is the ``dissonance`` service, so it exists before the scheduler), the intake
    behind ``POST /v1/feedback``, and — once the scheduler exists — the loop."""

    def __init__(
        self, cfg: SchedulerConfiguration, token: str | None, prometheus: str | None, interval: float
    ) -> None:
        from harmonic.feedback.service import prior_of
        from harmonic.signals.feedback.intake import FeedbackIntake
        from harmonic.signals.feedback.learning import InterferenceLearner
        from harmonic.signals.feedback.prometheus import FlourishSource

        self.learner = InterferenceLearner(prior_of(cfg))
        self.intake = FeedbackIntake(token) if token else None
        self.source = FlourishSource(prometheus) if prometheus else None
        self.interval = interval
        self.service: FeedbackService | None = None
        self.rightsizing: Any = None
        self.moves: Any = None

    def enable_rightsizing(self, transport: Any, prometheus: str | None, interval: float, args: Any) -> None:
        """Right-size through ``transport`` (the API server), reading use from ``prometheus`` (cAdvisor
        over one minute) or else metrics-server."""
        from harmonic.feedback.moves_live import InfeasibleResizes
        from harmonic.feedback.rightsizing_live import LiveRightSizing
        from harmonic.signals.usage import MetricsServerSource, PrometheusUsageSource, UsageSource

        usage: UsageSource
        if prometheus:
            usage = PrometheusUsageSource(prometheus, window="1m", name="feedback/usage")
        else:
            usage = MetricsServerSource(
                lambda path: transport.request("GET", path), name="feedback/metrics-server"
            )
        # Its Infeasible answers are the moves an Infeasible resize asks for.
        self.rightsizing = LiveRightSizing(usage, InfeasibleResizes(transport), args, interval)

    def enable_moves(self, live: Any, args: Any) -> None:
        """Carry moves out beside ``live`` (the ``LiveScheduler``): docs/feedback.md, "Moves"."""
        from harmonic.feedback.moves_live import LiveMoves
        from harmonic.plugins.registry import default_registry

        self.moves = LiveMoves.for_scheduler(live, default_registry(), args)
        if self.rightsizing is not None:
            self.rightsizing.actuator.restart_seconds = args.restart_seconds
            self.rightsizing.actuator.move_note = self.rightsizing.actuator.moves_executed

    @property
    def services(self) -> dict[str, Any]:
        from harmonic.plugins.dissonance import MODEL_SERVICE

        return {MODEL_SERVICE: self.learner.model}

    def start(self, on_state: OnState) -> None:
        from harmonic.feedback.service import FeedbackService

        self.service = FeedbackService(self.learner, on_state, self.intake, self.source, self.interval)
        self.service.rightsizing = self.rightsizing
        if self.moves is not None:
            from harmonic.feedback.moves import MoveAdvisor

            self.service.moves = self.moves
            self.service.advisor = MoveAdvisor(self.moves.args.settings())
        self.service.start()

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()

    def model_route(self, query: str) -> tuple[int, bytes, str]:
        from harmonic.feedback.report import model_state

        state = self.service.state() if self.service is not None else model_state(self.learner)
        return 200, json.dumps(state).encode(), "application/json"

    def post_route(self, authorization: str, body: bytes) -> tuple[int, bytes, str, Mapping[str, str]]:
        assert self.intake is not None
        code, doc, headers = self.intake.handle(authorization, body)
        return code, json.dumps(doc).encode(), "application/json", headers


def live_feedback(
    cfg: SchedulerConfiguration, token: str | None, prometheus: str | None, interval: float
) -> LiveFeedback | None:
    """None unless a feedback source is configured."""
    if token is None and prometheus is None:
        return None
    return LiveFeedback(cfg, token, prometheus, interval)


@click.command()
@click.argument("url", required=False)
@click.option(
    "--scenario", type=click.Path(exists=True, dir_okay=False), help="Learn by simulating this scenario."
)
@click.option("--config", "configs", multiple=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--profile", default=None, help="The simulated profile whose loop to show (default: the first)."
)
@click.option("--seed", type=int, default=None)
@click.option("--explain", "workload", metavar="NAMESPACE/NAME", default=None, help="Explain one workload.")
@click.option("--json", "as_json", is_flag=True, help="Print the model as JSON.")
def model(
    url: str | None,
    scenario: str | None,
    configs: tuple[str, ...],
    profile: str | None,
    seed: int | None,
    workload: str | None,
    as_json: bool,
) -> None:
    """Print the dissonance model the feedback loop learnt, against the prior, with confidence.

    From a running `harmonic run` (URL of its metrics port, e.g. http://127.0.0.1:10259) or extender
    (its URL), which serve it at /debug/model; or from a simulation (--scenario with a `feedback:` key,
    --config for the profiles).
    """
    if (url is None) == (scenario is None):
        raise click.UsageError("give a URL or --scenario")
    from harmonic.feedback.report import explain, render

    state = _from_url(url) if url is not None else _from_simulation(scenario or "", configs, profile, seed)
    if as_json:
        click.echo(json.dumps(state, indent=2))
        return
    if workload is None:
        click.echo(render(state), nl=False)
        return
    try:
        click.echo(explain(state, workload), nl=False)
    except KeyError as e:
        click.echo(f"error: {e.args[0]}", err=True)
        sys.exit(1)


def _from_url(url: str) -> dict[str, Any]:
    import httpx

    target = url.rstrip("/") + MODEL_PATH
    try:
        resp = httpx.get(target, timeout=10)
    except httpx.HTTPError as e:
        click.echo(f"error: {target}: {e}", err=True)
        sys.exit(1)
    if resp.status_code != 200:
        click.echo(f"error: {target}: HTTP {resp.status_code}: {resp.text[:200]}", err=True)
        sys.exit(1)
    doc: dict[str, Any] = resp.json()
    return doc


def _from_simulation(
    scenario: str, configs: tuple[str, ...], profile: str | None, seed: int | None
) -> dict[str, Any]:
    from harmonic.feedback.report import model_state
    from harmonic.framework.config import ConfigError
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.errors import ScenarioError
    from harmonic.sim.run import prepare, simulate

    registry = default_registry()
    try:
        plan, runs = prepare(scenario, list(configs), registry, seed=seed)
    except (ScenarioError, ConfigError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if plan.feedback is None:
        click.echo(f"error: {scenario}: the scenario has no feedback: key; nothing is learnt", err=True)
        sys.exit(1)
    names = [r.name for r in runs]
    chosen = profile or next((n for n in names if n != "default-scheduler"), names[0])
    if chosen not in names:
        click.echo(f"error: --profile {chosen!r}: not among the profiles {', '.join(names)}", err=True)
        sys.exit(1)
    out = simulate(plan, [r for r in runs if r.name == chosen], registry)
    loop = out.worlds[chosen].feedback
    assert loop is not None
    return model_state(loop.learner, decisions_log=loop.decisions())
