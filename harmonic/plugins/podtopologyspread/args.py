"""PodTopologySpreadArgs: cluster-level default constraints and how they are chosen.

``defaultingType: System`` (the default) uses kube-scheduler's built-in defaults — maxSkew 3 on
``kubernetes.io/hostname`` and maxSkew 5 on ``topology.kubernetes.io/zone``, both ``ScheduleAnyway`` —
and then ``defaultConstraints`` must be empty. ``List`` uses ``defaultConstraints`` as given (possibly
none). Validation reproduces upstream's ``ValidatePodTopologySpreadArgs``, with its messages.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from harmonic.framework.args import PluginArgs

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


class TopologySpreadConstraintArgs(PluginArgs):
    """A ``v1.TopologySpreadConstraint`` as written in ``defaultConstraints``."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] | None = None

    def manifest(self) -> dict[str, Any]:
        """The constraint in the Pod API's shape (what a pod's ``topologySpreadConstraints`` holds)."""
        return self.model_dump(by_alias=True, exclude_none=True)


SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraintArgs(max_skew=3, topology_key=HOSTNAME_KEY, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraintArgs(max_skew=5, topology_key=ZONE_KEY, when_unsatisfiable=SCHEDULE_ANYWAY),
)


def label_name_errors(path: str, value: str) -> list[str]:
    """metav1validation.ValidateLabelName: a qualified name ``[prefix/]name``."""
    parts = value.split("/")
    name = parts[-1]
    errs: list[str] = []
    if len(parts) > 2:
        return [
            f"{path}: Invalid value: {value!r}: a qualified name must consist of alphanumeric characters, "
            "'-', '_' or '.', with an optional DNS subdomain prefix and '/'"
        ]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append(f"{path}: Invalid value: {value!r}: prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            errs.append(
                f"{path}: Invalid value: {value!r}: prefix part must be a lowercase RFC 1123 subdomain "
                "of at most 253 characters"
            )
    if not name:
        errs.append(f"{path}: Invalid value: {value!r}: name part must be non-empty")
    elif len(name) > 63:
        errs.append(f"{path}: Invalid value: {value!r}: name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.fullmatch(name):
        errs.append(
            f"{path}: Invalid value: {value!r}: name part must consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return errs


class PodTopologySpreadArgs(PluginArgs):
    default_constraints: tuple[TopologySpreadConstraintArgs, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @model_validator(mode="after")
    def _validate(self) -> PodTopologySpreadArgs:
        errs = validation_errors(self)
        if errs:
            raise PydanticCustomError("pod_topology_spread_args", "{errors}", {"errors": "; ".join(errs)})
        return self

    @property
    def effective_constraints(self) -> tuple[TopologySpreadConstraintArgs, ...]:
        """The default constraints in force: the system ones, or ``defaultConstraints`` for List."""
        if self.defaulting_type == SYSTEM_DEFAULTING:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints


def validation_errors(args: PodTopologySpreadArgs) -> list[str]:
    """Every problem upstream's ValidatePodTopologySpreadArgs reports, as field-path messages."""
    errs: list[str] = []
    dt = args.defaulting_type
    if dt not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(f'defaultingType: Unsupported value: "{dt}": supported values: "System", "List"')
    elif dt == SYSTEM_DEFAULTING and args.default_constraints:
        errs.append(f'defaultingType: Invalid value: "{dt}": when .defaultConstraints are not empty')
    for i, c in enumerate(args.default_constraints):
        p = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            errs.append(f"{p}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
        if not c.topology_key:
            errs.append(f"{p}.topologyKey: Required value: can not be empty")
        else:
            errs.extend(label_name_errors(f"{p}.topologyKey", c.topology_key))
        if not c.when_unsatisfiable:
            errs.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
        elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errs.append(
                f'{p}.whenUnsatisfiable: Unsupported value: "{c.when_unsatisfiable}": '
                'supported values: "DoNotSchedule", "ScheduleAnyway"'
            )
        if c.label_selector is not None:
            errs.append(
                f"{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        for other in args.default_constraints[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                errs.append(
                    f'defaultConstraints[{i}]: Duplicate value: "{{{c.topology_key}, {c.when_unsatisfiable}}}"'
                )
                break
    return errs
