"""Extension points as plugin base classes (kube-scheduler's framework interfaces).

A plugin subclasses ``Plugin`` and the base class of every extension point it implements. Filter and
Score work on arrays of node slots at once (``slots`` index the ``Snapshot``'s arrays); a plugin that
only knows one node at a time subclasses ``NodeFilterPlugin`` / ``NodeScorePlugin`` instead and the
framework loops for it. Success is ``None``, as Go's nil status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, overload

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.cycle_state import PluginError as PluginError  # re-exported: plugins raise it
from harmonic.framework.events import ALL_EVENTS, EventWithHint
from harmonic.framework.services import Need, ServiceKey
from harmonic.framework.snapshot import NodeInfo, Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts

T = TypeVar("T")

if TYPE_CHECKING:
    from harmonic.framework.diagnosis import Diagnosis, FilterOutcome

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class ClusterClient(Protocol):
    """What plugins may ask of the cluster; implemented by each cluster adapter."""

    def bind(self, pod: Pod, node_name: str) -> Status | None: ...

    def evict(self, pod: Pod, reason: str) -> Status | None: ...

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None: ...


class RefusingClient:
    """A ``ClusterClient`` that changes nothing: every call is an Error saying why (an extender without
    cluster access, the rescheduler's what-if scheduler)."""

    def __init__(self, why: str) -> None:
        self.why = why

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return Status(Code.ERROR, self.why)

    def evict(self, pod: Pod, reason: str) -> Status | None:
        return Status(Code.ERROR, self.why)

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None:
        return Status(Code.ERROR, self.why)


class Clock(Protocol):
    def now(self) -> float: ...


class PodNominator(Protocol):
    """Pods nominated to run on nodes (the ``"nominator"`` service; framework.PodNominator)."""

    #: Changes whenever a nomination changes.
    version: int

    def __len__(self) -> int: ...

    def nodes(self) -> list[str]: ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]: ...


class PluginsRunner(Protocol):
    """The profile's extension points as plugins may run them (framework.PluginsRunner)."""

    def run_filters_with_nominated_pods(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray
    ) -> tuple[FilterOutcome, Status | None]: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, added: Pod, slot: int
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, removed: Pod, slot: int
    ) -> Status | None: ...

    def filters_node_local(self, state: CycleState) -> bool: ...


class Handle(Protocol):
    """What the framework offers plugins at construction (framework.Handle)."""

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def client(self) -> ClusterClient: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def profile_name(self) -> str: ...

    @property
    def runner(self) -> PluginsRunner:
        """The profile's framework, for plugins that run other plugins (preemption)."""
        ...

    def waiting_pod(self, uid: str) -> Any: ...

    @overload
    def service(self, key: ServiceKey[T]) -> T: ...

    @overload
    def service(self, key: str) -> Any: ...

    def service(self, key: ServiceKey[Any] | str) -> Any:
        """A shared service (``framework.services``: nominator, PDBs, harmonic models...) by typed key,
        or by name for services without one; ``KeyError`` if absent."""
        ...

    def optional_service(self, key: ServiceKey[T]) -> T | None:
        """The service, or ``None`` where the plugin declared a degraded mode without it."""
        ...

    def service_map(self) -> Mapping[str, Any]:
        """Every service by name (the framework checks plugins' ``needs`` against it)."""
        ...


class Plugin:
    """Base of every plugin. ``NAME`` is the name users write in KubeSchedulerConfiguration."""

    NAME: ClassVar[str] = ""
    #: True when the plugin's PreFilter reads only the pod, its Filter only the pod, its PreFilter state
    #: and the node's row of the snapshot (the node and the pods on it), and its PostFilter, when it
    #: nominates no node, only those and the nominated pods. A failed attempt that ran only such plugins
    #: fails again the same way while those rows are unchanged (``harmonic.scheduler.repeat``).
    NODE_LOCAL: ClassVar[bool] = False

    #: The handle services the plugin reads (``framework.services.Need``); see ``needs``.
    NEEDS: ClassVar[tuple[Need, ...]] = ()

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    @classmethod
    def needs(cls, args: Any) -> Sequence[Need]:
        """The services this plugin reads with these args; the framework refuses a profile missing a
        required one and logs each degraded mode once. Defaults to ``NEEDS``."""
        return cls.NEEDS

    @property
    def node_local(self) -> bool:
        """``NODE_LOCAL``, or what this instance's args make it."""
        return self.NODE_LOCAL

    @property
    def name(self) -> str:
        return self.NAME

    def events_to_register(self) -> Sequence[EventWithHint]:
        """Cluster events that may make a pod this plugin rejected schedulable (EnqueueExtensions).

        A plugin that does not say is assumed to care about every event, as upstream does for plugins
        without EnqueueExtensions; return ``()`` for "no event can help"."""
        return ALL_EVENTS


class QueuedPodInfo:
    """A pod in the scheduling queue with its bookkeeping (framework.QueuedPodInfo)."""

    __slots__ = (
        "attempts",
        "backoff_expiration",
        "consecutive_errors_count",
        "gating_plugin",
        "initial_attempt_timestamp",
        "pending_plugins",
        "pod",
        "seq",
        "timestamp",
        "unschedulable_count",
        "unschedulable_plugins",
    )

    def __init__(self, pod: Pod, timestamp: float, seq: int) -> None:
        self.pod = pod
        #: When the pod was added to the queue or last came back from a failed attempt.
        self.timestamp = timestamp
        self.attempts = 0
        #: Failed attempts that plugins rejected, and attempts in a row that failed with an error: the
        #: backoff grows with the latter after an error, with the former otherwise.
        self.unschedulable_count = 0
        self.consecutive_errors_count = 0
        #: End of the current backoff, computed on first use after each failure.
        self.backoff_expiration: float | None = None
        self.initial_attempt_timestamp: float | None = None
        #: Plugins that rejected the last attempt (or the PreEnqueue plugin that gated the pod).
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        #: The PreEnqueue plugin holding the pod back, "" when it is not gated.
        self.gating_plugin = ""
        #: Arrival order, the final tie-breaker for equal sort keys.
        self.seq = seq

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod.key}, attempts={self.attempts})"


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError

    def sort_key(self, qp: QueuedPodInfo) -> tuple[Any, ...] | None:
        """Optional: a key whose ascending order equals ``less`` (lets the queue use tuple comparison)."""
        return None


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: Pod) -> Status | None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Node names a PreFilter already knows are the only candidates; ``None`` means all nodes."""

    node_names: frozenset[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


class PreFilterPlugin(Plugin):
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        """PreFilterExtensions.AddPod: ``added`` is evaluated as if it ran on ``slot`` (nominated pods)."""
        return None

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        """PreFilterExtensions.RemovePod: ``removed`` is evaluated as gone from ``slot`` (preemption)."""
        return None

    @property
    def has_extensions(self) -> bool:
        cls = type(self)
        return cls.add_pod is not PreFilterPlugin.add_pod or cls.remove_pod is not PreFilterPlugin.remove_pod


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        """Verdicts for each slot in ``slots``; ``None`` when every node passes."""
        raise NotImplementedError


class NodeFilterPlugin(FilterPlugin):
    """Filter one node at a time; the framework loops over candidates."""

    def filter_node(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        codes = np.zeros(len(slots), dtype=np.int8)
        reason_ids = np.zeros(len(slots), dtype=np.int32)
        reasons: dict[tuple[str, ...], int] = {(): 0}
        for i, slot in enumerate(slots):
            st = self.filter_node(state, pod, snap.node_info(int(slot)))
            if st is not None and not st.is_success:
                codes[i] = int(st.code)
                reason_ids[i] = reasons.setdefault(st.reasons, len(reasons))
        return Verdicts(codes, reason_ids, list(reasons))


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        """Raw int64 scores for ``slots``. Raise ``PluginError`` to fail the cycle with an Error status."""
        raise NotImplementedError

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        """NormalizeScore; the default leaves scores as they are."""
        return scores

    @property
    def has_normalize(self) -> bool:
        return type(self).normalize_score is not ScorePlugin.normalize_score


class NodeScorePlugin(ScorePlugin):
    """Score one node at a time; the framework loops over candidates."""

    def score_node(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        return np.fromiter(
            (self.score_node(state, pod, snap.node_info(int(s))) for s in slots),
            dtype=np.int64,
            count=len(slots),
        )


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """(status, timeout seconds). Status WAIT parks the pod until allowed, rejected or timed out."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind, or return a SKIP status to let the next bind plugin do it."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
