"""The shared services a scheduler offers its plugins, typed, and what each plugin needs of them.

kube-scheduler's plugins reach shared informers and listers through ``framework.Handle``
(``SharedInformerFactory()``, ``SharedDRAManager()``...). Harmonic's adapters (the live scheduler, the
extender, the simulator's in-memory cluster, the conformance runner, the rescheduler's what-if) each
offer a set of *services* by name; a ``ServiceKey`` names one and carries its type, so
``handle.service(WORKLOADS)`` is a ``Workloads`` to the type checker.

A plugin declares what it reads with ``needs(args)`` (``Need`` entries). When a profile is built
(``check_needs``), a missing service is either

- refused: the plugin cannot do its job without it (``Need.without`` is ``None``), so the profile is not
  started and the error names the profile, plugin and service; or
- a degraded mode the plugin was written for (``Need.without`` says what changes), logged once per
  process, so the change in decisions is never silent. It is a warning when the user can act on it (a
  signal's source they configure: ``ServiceKey.user_provided``); when the adapter itself offers no such
  service (the rescheduler's what-if has no volumes, the extender no queue), nothing the user sets
  changes it, so each plugin's detail is logged at debug and the profile gets one summary line at info.

The services (name: type, who offers it):

- ``nominator``: ``PodNominator``, pods nominated to nodes by preemption; every ``Scheduler`` adds its own.
- ``pods``: ``PodListing``, every pod the scheduler has heard of, with change handlers; the scheduler
  and the extender add their own.
- ``pdbs``: a callable returning every PodDisruptionBudget as compiled ``PodDisruptionBudget``\\ s.
- ``namespaces``: ``Mapping`` namespace name -> its labels (namespaceSelector in pod affinity terms).
- ``workloads``: ``Workloads``, the selectors of Services, ReplicationControllers, ReplicaSets and
  StatefulSets (PodTopologySpread's default constraints).
- ``volumes``: ``VolumeLister``, PersistentVolumes, claims, StorageClasses, CSINodes and attachments.
- ``batch``: ``BatchObjects``, scheduler-plugins' PodGroups and ElasticQuotas.
- ``activate``: a callable moving pods to the active queue (Handle.Activate); ``waiting_pods``: a
  callable returning the pods waiting at Permit (IterateOverWaitingPods). Every ``Scheduler`` adds both;
  the extender has neither (no queue, nothing waits).

Signals add their own keys the same way, beside the model they serve: ``signals.graph.AFFINITY_GRAPH``,
``signals.usage.NODE_USAGE``, ``signals.dissonance.DISSONANCE``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, overload

from harmonic.api.batch import SERVICE_NAME as BATCH_NAME
from harmonic.api.workloads import SERVICE_NAME as WORKLOADS_NAME

if TYPE_CHECKING:
    from harmonic.api.batch import BatchObjects
    from harmonic.api.pdb import PodDisruptionBudget
    from harmonic.api.pod import Pod
    from harmonic.api.workloads import Workloads
    from harmonic.framework.interface import PodNominator
    from harmonic.framework.volumes import VolumeLister

log = logging.getLogger(__name__)

T = TypeVar("T")
V_co = TypeVar("V_co", covariant=True)


@dataclass(frozen=True)
class ServiceKey(Generic[T]):
    """The name of a handle service and, through ``T``, its type."""

    name: str
    #: What it holds, for error messages.
    what: str
    #: Offered when the user configures its source (a signal such as the affinity graph); ``False`` for
    #: the services the scheduler adapter offers or not by construction, whatever the user sets.
    user_provided: bool = False


class ViewSource(Protocol[V_co]):
    """A model served to plugins as an immutable ``view``, swapped whole on each refresh (the affinity
    graph, the usage model): a plugin reads ``view`` once per cycle and sees one consistent version."""

    @property
    def view(self) -> V_co: ...


class WaitingPodHandle(Protocol):
    """A pod waiting at Permit, as plugins see it (framework.WaitingPod)."""

    @property
    def pod(self) -> Pod: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class PodListing(Protocol):
    """The ``pods`` service (scheduler.podlister.PodLister)."""

    def add_handler(self, fn: Callable[[Pod | None, Pod | None], None], replay: bool = True) -> None: ...

    def get(self, uid: str) -> Pod | None: ...


NOMINATOR: ServiceKey[PodNominator] = ServiceKey("nominator", "pods nominated to nodes by preemption")
PODS: ServiceKey[PodListing] = ServiceKey("pods", "every pod the scheduler has heard of")
PDBS: ServiceKey[Callable[[], list[PodDisruptionBudget]]] = ServiceKey("pdbs", "PodDisruptionBudgets")
NAMESPACES: ServiceKey[Mapping[str, Mapping[str, str]]] = ServiceKey("namespaces", "namespace labels")
WORKLOADS: ServiceKey[Workloads] = ServiceKey(
    WORKLOADS_NAME, "the selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets"
)
VOLUMES: ServiceKey[VolumeLister] = ServiceKey("volumes", "PersistentVolumes, claims and storage classes")
BATCH: ServiceKey[BatchObjects] = ServiceKey(BATCH_NAME, "PodGroups and ElasticQuotas")
ACTIVATE: ServiceKey[Callable[[Iterable[Pod]], None]] = ServiceKey(
    "activate", "moves pods to the active scheduling queue"
)
WAITING_PODS: ServiceKey[Callable[[], list[WaitingPodHandle]]] = ServiceKey(
    "waiting_pods", "the pods waiting at Permit"
)


class MissingServiceError(ValueError):
    """A profile's plugin needs a service its scheduler was not given."""


@dataclass(frozen=True)
class Need:
    """A service a plugin reads. ``without``: what the plugin does when it is absent (a degraded mode,
    logged once); ``None`` when it cannot work without it (the profile is refused). ``optional``: the
    absence is an ordinary configuration, not a degradation (logged at info, not as a warning)."""

    key: ServiceKey[Any]
    without: str | None = None
    optional: bool = False


#: What preemption (DefaultPreemption, CapacityScheduling's reclaiming) reads.
PREEMPTION_NEEDS = (
    Need(NOMINATOR, "pods nominated by earlier preemptions are neither counted nor un-nominated"),
    Need(PDBS, "no PodDisruptionBudget protects a victim"),
)
#: What the volume plugins read.
VOLUME_NEEDS = (Need(VOLUMES, "no storage objects exist: a pod's claims and volumes are not found"),)


class ServiceAccess:
    """Typed access to a handle's services; a handle subclasses it and implements ``service_map``."""

    def service_map(self) -> Mapping[str, Any]:
        raise NotImplementedError

    @overload
    def service(self, key: ServiceKey[T]) -> T: ...

    @overload
    def service(self, key: str) -> Any: ...

    def service(self, key: ServiceKey[Any] | str) -> Any:
        """The service; ``KeyError`` naming it if the scheduler has none."""
        name = key if isinstance(key, str) else key.name
        services = self.service_map()
        if name not in services:
            raise KeyError(f"no {name!r} service")
        return services[name]

    def optional_service(self, key: ServiceKey[T]) -> T | None:
        """The service, or ``None`` when the scheduler has none (a declared degraded mode)."""
        return cast("T | None", self.service_map().get(key.name))

    def has_service(self, key: ServiceKey[Any]) -> bool:
        return key.name in self.service_map()


#: (profile or plugin, service) pairs whose degraded mode was already logged: once per process is enough.
_logged: set[tuple[str, str]] = set()


def check_needs(
    profile_name: str, plugins: Iterable[tuple[str, Iterable[Need]]], offered: Mapping[str, Any]
) -> None:
    """Refuse a profile whose plugin needs a service not in ``offered``; log each degraded mode once."""
    by_adapter: dict[str, int] = {}  # service the adapter does not offer -> plugins that run without it
    for plugin, needs in plugins:
        for need in needs:
            if need.key.name in offered:
                continue
            if need.without is None:
                raise MissingServiceError(
                    f"profile {profile_name}: plugin {plugin} needs the {need.key.name!r} service "
                    f"({need.key.what}), which this scheduler does not provide"
                )
            if need.optional:
                level = logging.INFO
            elif need.key.user_provided:
                level = logging.WARNING
            else:
                level = logging.DEBUG
                by_adapter[need.key.name] = by_adapter.get(need.key.name, 0) + 1
            if (plugin, need.key.name) not in _logged:
                _logged.add((plugin, need.key.name))
                log.log(
                    level,
                    "profile %s: plugin %s runs without the %r service (%s): %s",
                    profile_name,
                    plugin,
                    need.key.name,
                    need.key.what,
                    need.without,
                )
    summary = (f"profile {profile_name}", ",".join(sorted(by_adapter)))
    if by_adapter and summary not in _logged:
        _logged.add(summary)
        log.info(
            "profile %s: %d plugins run without services this scheduler does not offer (%s); "
            "-vv logs what each does without",
            profile_name,
            sum(by_adapter.values()),
            ", ".join(repr(s) for s in by_adapter),
        )
