"""What ``harmonic run``, ``harmonic extender`` and ``harmonic reschedule`` check of their configuration
before they start, in one place, so ``harmonic config check --for COMMAND`` says exactly what the command
would.

Beyond the KubeSchedulerConfiguration itself (``framework.config``):

- ``run`` is a second scheduler beside kube-scheduler: it must not take kube-scheduler's lease, and it
  must not take ``default-scheduler`` pods unless the file names that profile (a file with no
  ``profiles``, or one profile without a ``schedulerName``, is ``default-scheduler`` by kube-scheduler's
  defaulting, which is right for kube-scheduler and wrong for a second scheduler: both would bind the
  same pods, neither seeing the other's assumed pods);
- ``run`` and ``extender`` read CommunicationAffinity's topology and AppGroup files at start, and
  ``run`` builds the load-aware plugins' usage model: a missing file or disagreeing profiles are errors;
- the kubeconfig that will be used when no ``--kubeconfig`` is given (``clientConnection.kubeconfig``)
  must load as the command loads it: its context, cluster and user exist, an exec credential plugin it
  names is installed and gives credentials, its server address and TLS settings are usable. The
  client is handed to the command, so a credential plugin runs once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harmonic.framework.config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    SchedulerConfiguration,
    load_config,
    load_config_file,
)
from harmonic.signals.promquery import QueryLimits

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from harmonic.signals.service import GraphService

Command = Literal["run", "extender", "reschedule"]
COMMANDS: tuple[Command, ...] = ("run", "extender", "reschedule")

#: kube-scheduler's own lease (its leaderElection defaults).
KUBE_SCHEDULER_LEASE = ("kube-system", "kube-scheduler")


@dataclass
class Prepared:
    """A configuration a command may start with, and the services built from it on the way."""

    config: SchedulerConfiguration
    #: The affinity graph service (``run`` and ``extender``), not started.
    graphs: dict[str, GraphService]
    #: The API client of ``clientConnection.kubeconfig`` when that is the kubeconfig the command uses.
    api: ApiClient | None = None


def prepare(
    path: str | None, command: Command, kubeconfig: str | None = None, context: str | None = None
) -> Prepared:
    """Load ``path`` (None: kube-scheduler's default profile) and check it as ``command`` will use it;
    ``kubeconfig``/``context`` are the command's flags. Raises ``ConfigError`` with one line naming the
    file and field."""
    from harmonic.plugins.registry import default_registry

    cfg = (
        load_config(None, default_registry(), source="<default profile>")
        if path is None
        else load_config_file(path, default_registry())
    )
    try:
        QueryLimits.from_env()
    except ValueError as e:
        raise ConfigError(f"environment: {e}") from None
    if command == "run":
        _second_scheduler(cfg)
    graphs = _graphs(cfg) if command in ("run", "extender") else {}
    if command == "run":
        _usage(cfg)
    api = _client(cfg, context) if kubeconfig is None and cfg.client_connection.kubeconfig else None
    return Prepared(cfg, graphs, api)


def _second_scheduler(cfg: SchedulerConfiguration) -> None:
    le = cfg.leader_election
    if le.leader_elect and (le.resource_namespace, le.resource_name) == KUBE_SCHEDULER_LEASE:
        raise ConfigError(
            f"{cfg.source}: leaderElection.resourceName: 'kube-scheduler' is kube-scheduler's own lease; a "
            "second scheduler taking it would stop kube-scheduler. Set a name of its own (e.g. harmonic)."
        )
    if cfg.implicit_default_profile:
        raise ConfigError(
            f"{cfg.source}: profiles: no profile names its schedulerName, so it would be "
            f"{DEFAULT_SCHEDULER_NAME!r} and take the pods kube-scheduler schedules. Name this scheduler's "
            f"profile (e.g. schedulerName: harmonic), or write schedulerName: {DEFAULT_SCHEDULER_NAME} to "
            "replace kube-scheduler on purpose."
        )


def _graphs(cfg: SchedulerConfiguration) -> dict[str, GraphService]:
    from harmonic.plugins.communicationaffinity.setup import graph_services

    try:
        return graph_services(cfg)
    except ConfigError:
        raise
    except (OSError, ValueError) as e:
        raise ConfigError(f"{cfg.source}: CommunicationAffinity telemetry: {e}") from None


def _usage(cfg: SchedulerConfiguration) -> None:
    """The usage model builds (profiles agree on metricProvider); it reads nothing until started."""
    from harmonic.plugins.usage_setup import usage_services

    def unused(path: str) -> Any:
        raise AssertionError("the usage model is only checked here, never started")

    usage_services(cfg, unused)


def _client(cfg: SchedulerConfiguration, context: str | None) -> ApiClient:
    """The client ``clientConnection.kubeconfig`` gives, loaded as the command loads it (credential
    plugins run) and its server address and TLS settings usable."""
    from harmonic.cluster.transport import ClientConfigError, Transport, load_client

    try:
        api = load_client(cfg.client_connection.kubeconfig, context)
        Transport(api)
    except ClientConfigError as e:
        raise ConfigError(f"{cfg.source}: clientConnection.kubeconfig: {e}") from None
    return api
