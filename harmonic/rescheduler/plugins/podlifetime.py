"""PodLifeTime — deschedule. Evicts pods older than ``maxPodLifeTimeSeconds`` and/or in given ``states``,
``conditions`` or with given ``exitCodes`` (at least one criterion is required), oldest first. Evicts by
design: no placement simulation.

Args (descheduler's, no defaults beyond unset): ``namespaces``, ``labelSelector``, ``ownerKinds``
(``include`` or ``exclude``), ``maxPodLifeTimeSeconds``, ``states``, ``conditions`` (``type``,
``status``, ``reason``, ``minTimeSinceLastTransitionSeconds``), ``exitCodes``,
``includingInitContainers``, ``includingEphemeralContainers``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.timestamps import parse_time
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.framework import DeschedulePlugin, evict_each
from harmonic.rescheduler.plugins.common import filtered, terminated, waiting_reasons
from harmonic.rescheduler.state import container_statuses, created_at

ALLOWED_STATES = frozenset(
    [
        "Running",
        "Pending",
        "Succeeded",
        "Failed",
        "Unknown",
        "NodeAffinity",
        "NodeLost",
        "Shutdown",
        "UnexpectedAdmissionError",
        "PodInitializing",
        "ContainerCreating",
        "ImagePullBackOff",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "ErrImagePull",
        "CreateContainerError",
        "InvalidImageName",
        "OOMKilled",
        "Error",
        "Completed",
        "DeadlineExceeded",
        "Evicted",
        "ContainerCannotRun",
        "StartError",
    ]
)


#: Go's zero time (0001-01-01T00:00:00Z) in Unix seconds.
_GO_ZERO_TIME = -62_135_596_800.0


def _born(p: Pod) -> float:
    """Creation time; upstream reads an unset creationTimestamp as Go's zero time, older than any limit."""
    born = created_at(p)
    return _GO_ZERO_TIME if born is None else born


class OwnerKinds(PluginArgs):
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _one(self) -> OwnerKinds:
        if self.include and self.exclude:
            raise ValueError("only one of Include/Exclude ownerKinds can be set")
        return self


class PodConditionFilter(PluginArgs):
    type: str = ""
    status: str = ""
    reason: str = ""
    min_time_since_last_transition_seconds: int | None = Field(default=None, ge=0)


class PodLifeTimeArgs(FilteredArgs):
    owner_kinds: OwnerKinds | None = None
    max_pod_life_time_seconds: int | None = Field(default=None, ge=0)
    states: tuple[str, ...] = ()
    conditions: tuple[PodConditionFilter, ...] = ()
    exit_codes: tuple[int, ...] = ()
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False

    @model_validator(mode="after")
    def _valid(self) -> PodLifeTimeArgs:
        bad = [s for s in self.states if s not in ALLOWED_STATES]
        if bad:
            raise ValueError(f"states must be one of {sorted(ALLOWED_STATES)}")
        for i, c in enumerate(self.conditions):
            if not (c.type or c.status or c.reason or c.min_time_since_last_transition_seconds is not None):
                raise ValueError(
                    f"conditions[{i}]: at least one of type, status, reason, or minTimeSinceLastTransitionSeconds must be set"
                )
        if self.max_pod_life_time_seconds is None and not (self.states or self.conditions or self.exit_codes):
            raise ValueError(
                "at least one filtering criterion must be specified (maxPodLifeTimeSeconds, states, conditions, or exitCodes)"
            )
        return self


class PodLifeTime(DeschedulePlugin):
    NAME: ClassVar[str] = "PodLifeTime"
    Args = PodLifeTimeArgs
    args: PodLifeTimeArgs

    def _matches(self, p: Pod) -> bool:
        a, now = self.args, self.handle.state.now
        if a.max_pod_life_time_seconds is not None:
            age = now - _born(p)
            if age < 0 or int(age) <= a.max_pod_life_time_seconds:
                return False
        if a.states and not self._in_states(p):
            return False
        if a.owner_kinds is not None:
            kinds = {o.kind for o in p.owners}
            if a.owner_kinds.include and not kinds & set(a.owner_kinds.include):
                return False
            if not a.owner_kinds.include and kinds & set(a.owner_kinds.exclude):
                return False
        if a.conditions and not self._conditions(p):
            return False
        if a.exit_codes:
            statuses = container_statuses(p)
            if a.including_init_containers:
                statuses += container_statuses(p, "initContainerStatuses")
            if not any(t.get("exitCode") in a.exit_codes for t in terminated(statuses)):
                return False
        return True

    def _in_states(self, p: Pod) -> bool:
        states = set(self.args.states)
        if p.phase in states or (p.raw.get("status") or {}).get("reason") in states:
            return True
        kinds = ["containerStatuses"]
        if self.args.including_init_containers:
            kinds.append("initContainerStatuses")
        if self.args.including_ephemeral_containers:
            kinds.append("ephemeralContainerStatuses")
        for k in kinds:
            st = container_statuses(p, k)
            if (
                set(waiting_reasons(st)) & states
                or {str(t.get("reason", "")) for t in terminated(st)} & states
            ):
                return True
        return False

    def _conditions(self, p: Pod) -> bool:
        now = self.handle.state.now
        for f in self.args.conditions:
            for c in (p.raw.get("status") or {}).get("conditions") or ():
                if (f.type and c.get("type") != f.type) or (f.status and c.get("status") != f.status):
                    continue
                if f.reason and c.get("reason") != f.reason:
                    continue
                if f.min_time_since_last_transition_seconds is not None:
                    t = c.get("lastTransitionTime")
                    if not t:
                        continue
                    idle = now - parse_time(f"Pod {p.key}", "status.conditions.lastTransitionTime", t) / 1e9
                    if idle < 0 or int(idle) < f.min_time_since_last_transition_seconds:
                        continue
                return True
        return False

    def deschedule(self, nodes: list[Node]) -> None:
        keep = filtered(self.handle, self.args)
        pods = [
            p
            for n in nodes
            for p in self.handle.pods_on(n.name, terminal=True)
            if keep(p) and self._matches(p)
        ]
        pods.sort(key=_born)
        evict_each(self.handle, pods, self.NAME, "pod lifetime exceeded", move=False, node_limit="continue")
