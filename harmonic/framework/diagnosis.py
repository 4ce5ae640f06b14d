"""Why a pod fits nowhere: per-node filter statuses and kube-scheduler's FitError message."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from harmonic.framework.status import Code, Status


@dataclass(slots=True)
class FilterOutcome:
    """Dense filter results for a run of candidate nodes, aligned by position.

    ``codes[i]`` is 0 where ``slots[i]`` passed every filter; otherwise the first rejecting plugin is
    ``plugin_names[plugin_ids[i]]`` and its reasons are ``reasons[reason_ids[i]]``.
    """

    slots: np.ndarray
    codes: np.ndarray
    plugin_ids: np.ndarray
    reason_ids: np.ndarray
    reasons: list[tuple[str, ...]]
    plugin_names: list[str]

    def prefix(self, n: int) -> FilterOutcome:
        return FilterOutcome(
            self.slots[:n],
            self.codes[:n],
            self.plugin_ids[:n],
            self.reason_ids[:n],
            self.reasons,
            self.plugin_names,
        )

    @property
    def passed(self) -> np.ndarray:
        return self.slots[self.codes == 0]


@dataclass(slots=True)
class Diagnosis:
    """framework.Diagnosis: statuses of the nodes that failed, and which plugins failed the pod."""

    num_all_nodes: int = 0
    outcomes: list[FilterOutcome] = field(default_factory=list)
    #: Status given to nodes a PreFilter result excluded (not evaluated), and how many there were.
    absent_status: Status | None = None
    absent_count: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    @classmethod
    def rejected_on_node(cls, status: Status) -> Diagnosis:
        """The FitError of a pod a Reserve or Permit plugin rejected on its chosen node (NumAllNodes 1)."""
        d = cls(num_all_nodes=1, absent_status=status, absent_count=1)
        d.add_plugin_status(status)
        return d

    def add_plugin_status(self, status: Status) -> None:
        """AddPluginStatus: remember which plugin rejected the pod (nothing for a status without one)."""
        if not status.plugin:
            return
        if status.is_rejected:
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)

    def add(self, outcome: FilterOutcome) -> None:
        failed = outcome.codes != 0
        if not failed.any():
            return
        self.outcomes.append(outcome)
        # (plugin, code) pairs present, counted in one pass: codes are < 8.
        keys = outcome.plugin_ids[failed].astype(np.int64) * 8 + outcome.codes[failed]
        for key in np.flatnonzero(np.bincount(keys)).tolist():
            pid, code = divmod(key, 8)
            name = outcome.plugin_names[pid]
            if code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                self.unschedulable_plugins.add(name)
            elif code == Code.PENDING:
                self.pending_plugins.add(name)

    def statuses(self) -> dict[int, Status]:
        """Status per failed slot (diagnostics, extender answers, preemption)."""
        out: dict[int, Status] = {}
        for o in self.outcomes:
            failed = np.flatnonzero(o.codes)
            for i in failed.tolist():
                out[int(o.slots[i])] = Status(
                    Code(int(o.codes[i])),
                    *o.reasons[int(o.reason_ids[i])],
                    plugin=o.plugin_names[int(o.plugin_ids[i])],
                )
        return out

    def reason_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for o in self.outcomes:
            failed = o.codes != 0
            per_reason = np.bincount(o.reason_ids[failed], minlength=len(o.reasons))
            for rid in np.flatnonzero(per_reason).tolist():
                for reason in o.reasons[rid]:
                    counts[reason] += int(per_reason[rid])
        if self.absent_status is not None and self.absent_count:
            for reason in self.absent_status.reasons:
                counts[reason] += self.absent_count
        return counts

    def message(self) -> str:
        """The FitError text: ``0/N nodes are available: <PreFilter message | count reason, ...>.``
        followed by the PostFilter message as it is (it brings its own punctuation)."""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            parts = sorted(f"{n} {reason}" for reason, n in self.reason_counts().items())
            if parts:
                msg += f" {', '.join(parts)}."
        if self.post_filter_msg:
            msg += f" {self.post_filter_msg}"
        return msg
