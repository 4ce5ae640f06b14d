"""Why each pod went where it went, or nowhere: scheduling decisions recorded for the decision explorer.

A ``DecisionTrace`` is filled in while one scheduling cycle (or one extender filter / prioritize call)
runs: the PreFilter status and the nodes a PreFilter result left out, every Filter outcome over the
nodes evaluated, each Score plugin's raw and normalised scores over the feasible nodes, the final
choice with its tie-break, and the failure message (kube-scheduler's FitError text) with PostFilter's
nomination. While scheduling it only keeps references to the numpy arrays the cycle made anyway (the raw
scores are copied, as NormalizeScore may rewrite them); the per-node data is built when the decision is
read: ``to_json`` for ``/debug/decisions`` and ``harmonic ui``, ``to_record`` (compact, numpy bytes)
for the simulator's ``decisions.msgpack``, which ``document`` turns into the same JSON.

Nothing here runs unless a ``DecisionLog`` is attached to the scheduler or extender: when recording is
off, a cycle costs one ``is None`` test more.

The JSON document of one decision (keys in kube-scheduler's wire spelling where it has one)::

    {"id", "time", "wallTime", "source": "scheduler" | "extender/filter" | "extender/prioritize",
     "profile", "pod": "ns/name", "uid",
     "result": "Scheduled" | "Unschedulable" | "Error" | "Filtered" | "Prioritized",
     "node": chosen node or null, "message": the FitError / error text ("" when scheduled),
     "nodes": {"all", "evaluated", "feasible"},
     "preFilter": {"code", "plugin", "message"} or null,
     "nominatedNode": {"node", "passed"} or null (a preemptor's nominated node, tried first),
     "filter": [{"node", "code", "plugin", "reasons"}] one row per node that failed a filter
               (or was left out by PreFilter), nodes in evaluation order,
     "passed": [nodes that passed every filter (the feasible nodes)],
     "scores": {"plugins": [{"name", "weight"}], "nodes": [feasible nodes in evaluation order],
                "raw": [[per node] per plugin], "normalized": [[...] per plugin],
                "weighted": [[...] per plugin], "total": [per node]} or null
               (columns, not a dict per node: a few lists of integers are far cheaper to build and
               to encode when decisions have hundreds of nodes),
     "choice": {"node", "total", "ties": [nodes with the best total], "tieBreak"} or null,
     "postFilter": {"message", "nominatedNode"} or null,
     "verdict": one line, ``harmonic.framework.explain.verdict``}
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from time import time as wall_clock
from typing import Any
from urllib.parse import parse_qs

import numpy as np

from harmonic.framework.diagnosis import FilterOutcome
from harmonic.framework.explain import verdict
from harmonic.framework.status import Code, Status

#: Default size of the live ring buffer (``--decisions-buffer``).
DEFAULT_BUFFER = 1000
#: Pods per profile whose latest decision a simulation keeps by default (``--record-decisions``).
#: Bounded because a kept decision holds its per-node arrays (about 40 KB with 1,000 nodes).
DEFAULT_PODS_KEPT = 5000

RESULT_SCHEDULED = "Scheduled"
RESULT_UNSCHEDULABLE = "Unschedulable"
RESULT_ERROR = "Error"
RESULT_FILTERED = "Filtered"
RESULT_PRIORITIZED = "Prioritized"
_CODE_NAMES = [c.wire_name for c in Code]


@dataclass(slots=True)
class ScoreDetail:
    """Filled by ``Framework.run_score`` when asked: per plugin that scored, its weight, its Score
    output and (for plugins with NormalizeScore) the normalised scores, aligned with the slots scored."""

    plugins: list[str] = field(default_factory=list)
    weights: list[int] = field(default_factory=list)
    raw: list[np.ndarray] = field(default_factory=list)
    normalized: list[np.ndarray] = field(default_factory=list)


def _status_json(st: Status) -> dict[str, Any]:
    return {"code": st.code.wire_name, "plugin": st.plugin, "message": st.message}


@dataclass(slots=True)
class DecisionTrace:
    """One decision as it is being made; slots are resolved to node names with ``names`` (the snapshot's
    slot -> name array at the time, which the snapshot replaces rather than mutates)."""

    source: str
    profile: str
    pod_key: str
    uid: str
    time: float
    names: np.ndarray
    all_nodes: int = 0
    pre_filter: Status | None = None
    #: Nodes a PreFilter result left out: how many, and the status they get.
    excluded: tuple[int, Status] | None = None
    excluded_slots: np.ndarray | None = None
    nominated: tuple[str, bool] | None = None
    outcomes: list[FilterOutcome] = field(default_factory=list)
    evaluated: int = 0
    feasible: np.ndarray | None = None
    score: ScoreDetail | None = None
    total: np.ndarray | None = None
    chosen: int = -1
    result: str = ""
    node: str | None = None
    message: str = ""
    post_filter: tuple[str, str | None] | None = None
    id: int = 0
    #: Wall-clock time (Unix seconds) of the decision, beside ``time`` (the scheduler's clock: monotonic
    #: live, virtual in a simulation), so an operator can match it with logs and Events.
    wall: float = field(default_factory=wall_clock)

    def to_json(self) -> dict[str, Any]:
        return document(self.to_record())

    def to_record(self) -> dict[str, Any]:
        """The decision in compact form: scalars, node names, and the per-node numbers as the bytes of
        their numpy arrays (``document`` expands it). Cheap to build and to encode as MessagePack, which
        is how the simulator writes tens of thousands of them."""
        names = self.names
        feasible = self.feasible if self.feasible is not None else np.zeros(0, dtype=np.int64)
        failed = []
        for o in self.outcomes:
            at = np.flatnonzero(o.codes)
            if len(at):
                failed.append(
                    {
                        "nodes": names[o.slots[at]].tolist(),
                        "codes": o.codes[at].astype(np.int8).tobytes(),
                        "plugins": o.plugin_ids[at].astype(np.int16).tobytes(),
                        "reasons": o.reason_ids[at].astype(np.int32).tobytes(),
                        "pluginNames": o.plugin_names,
                        "reasonTable": [list(r) for r in o.reasons],
                    }
                )
        excluded = None
        if self.excluded is not None and self.excluded_slots is not None:
            st = self.excluded[1]
            excluded = {
                "nodes": names[self.excluded_slots].tolist(),
                "code": st.code.wire_name,
                "plugin": st.plugin,
                "reasons": list(st.reasons),
            }
        return {
            "id": self.id,
            "time": round(self.time, 6),
            "wallTime": round(self.wall, 3),
            "source": self.source,
            "profile": self.profile,
            "pod": self.pod_key,
            "uid": self.uid,
            "result": self.result,
            "node": self.node,
            "message": self.message,
            "all": self.all_nodes,
            "evaluated": self.evaluated,
            "preFilter": _status_json(self.pre_filter) if self.pre_filter is not None else None,
            "nominated": list(self.nominated) if self.nominated else None,
            "excluded": excluded,
            "failed": failed,
            "passed": names[feasible].tolist(),
            "scores": self._scores(feasible),
            "choice": self._choice_json(names, feasible),
            "postFilter": list(self.post_filter) if self.post_filter is not None else None,
        }

    def _scores(self, feasible: np.ndarray) -> dict[str, Any] | None:
        sd, total = self.score, self.total
        if sd is None or total is None or not len(feasible):
            return None
        k = len(sd.plugins)
        return {
            "plugins": sd.plugins,
            "weights": sd.weights,
            "raw": np.stack(sd.raw).astype(np.int64).tobytes() if k else b"",
            "normalized": np.stack(sd.normalized).astype(np.int64).tobytes() if k else b"",
            "total": total.astype(np.int64).tobytes(),
        }

    def _choice_json(self, names: np.ndarray, feasible: np.ndarray) -> dict[str, Any] | None:
        if self.chosen < 0:
            return None
        total = self.total
        if total is None or not len(total):
            how = "the nominated node passed every filter" if self.nominated else "the only feasible node"
            return {"node": names[self.chosen], "total": None, "ties": [names[self.chosen]], "tieBreak": how}
        best = int(total.max())
        ties = names[feasible[total == best]].tolist()
        how = (
            "the only node with the best total"
            if len(ties) == 1
            else f"uniform draw among the {len(ties)} nodes with the best total (seeded)"
        )
        return {"node": names[self.chosen], "total": best, "ties": ties, "tieBreak": how}


def document(rec: dict[str, Any]) -> dict[str, Any]:
    """The JSON document (see the module docstring) of a record made by ``DecisionTrace.to_record``."""
    passed: list[str] = rec["passed"]
    rows: list[dict[str, Any]] = []
    ex = rec["excluded"]
    if ex is not None:
        rows.extend(
            {"node": n, "code": ex["code"], "plugin": ex["plugin"], "reasons": ex["reasons"]}
            for n in ex["nodes"]
        )
    for f in rec["failed"]:
        names, table = f["pluginNames"], f["reasonTable"]
        rows.extend(
            {"node": node, "code": _CODE_NAMES[code], "plugin": names[pid], "reasons": table[rid]}
            for node, code, pid, rid in zip(
                f["nodes"],
                np.frombuffer(f["codes"], dtype=np.int8).tolist(),
                np.frombuffer(f["plugins"], dtype=np.int16).tolist(),
                np.frombuffer(f["reasons"], dtype=np.int32).tolist(),
                strict=True,
            )
        )
    scores = None
    sc = rec["scores"]
    if sc is not None:
        shape = (len(sc["plugins"]), len(passed))
        raw = np.frombuffer(sc["raw"], dtype=np.int64).reshape(shape)
        norm = np.frombuffer(sc["normalized"], dtype=np.int64).reshape(shape)
        weighted = norm * np.asarray(sc["weights"], dtype=np.int64)[:, None]
        scores = {
            "plugins": [{"name": p, "weight": w} for p, w in zip(sc["plugins"], sc["weights"], strict=True)],
            "nodes": passed,
            "raw": raw.tolist(),
            "normalized": norm.tolist(),
            "weighted": weighted.tolist(),
            "total": np.frombuffer(sc["total"], dtype=np.int64).tolist(),
        }
    nominated, post = rec["nominated"], rec["postFilter"]
    doc = {
        **{k: rec[k] for k in ("id", "time", "source", "profile", "pod", "uid", "result", "node", "message")},
        # Records written before wall time was recorded have none.
        "wallTime": rec.get("wallTime"),
        "nodes": {"all": rec["all"], "evaluated": rec["evaluated"], "feasible": len(passed)},
        "preFilter": rec["preFilter"],
        "nominatedNode": {"node": nominated[0], "passed": nominated[1]} if nominated else None,
        "filter": rows,
        "passed": passed,
        "scores": scores,
        "choice": rec["choice"],
        "postFilter": {"message": post[0], "nominatedNode": post[1]} if post is not None else None,
    }
    doc["verdict"] = verdict(doc)
    return doc


class DecisionLog:
    """The recorded decisions, thread-safe (the scheduler's thread writes, HTTP threads read).

    ``per_pod=False``: a ring buffer of the last ``capacity`` decisions (every attempt), the live
    ``/debug/decisions`` endpoint. ``per_pod=True``: the latest decision of each pod, for the last
    ``capacity`` pods decided (the simulator: one entry per pod explains where it is or why it waits).
    """

    def __init__(self, capacity: int = DEFAULT_BUFFER, *, per_pod: bool = False) -> None:
        if capacity < 1:
            raise ValueError(f"decision log capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self.per_pod = per_pod
        self._ring: deque[DecisionTrace] = deque(maxlen=capacity)
        self._by_pod: OrderedDict[tuple[str, str], DecisionTrace] = OrderedDict()
        self._lock = threading.Lock()
        self._next_id = 1
        self.total = 0

    def add(self, trace: DecisionTrace) -> None:
        with self._lock:
            trace.id = self._next_id
            self._next_id += 1
            self.total += 1
            if not self.per_pod:
                self._ring.append(trace)
                return
            key = (trace.profile, trace.uid)
            self._by_pod.pop(key, None)
            self._by_pod[key] = trace
            if len(self._by_pod) > self.capacity:
                self._by_pod.popitem(last=False)

    def traces(self) -> list[DecisionTrace]:
        """Oldest first."""
        with self._lock:
            return list(self._by_pod.values()) if self.per_pod else list(self._ring)

    def __len__(self) -> int:
        return len(self._by_pod) if self.per_pod else len(self._ring)

    def documents(
        self, pod: str | None = None, since: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """JSON documents, oldest first: those with an id above ``since`` whose pod key contains
        ``pod``, the newest ``limit`` of them."""
        picked: Iterable[DecisionTrace] = (
            t for t in self.traces() if t.id > since and (pod is None or pod in t.pod_key)
        )
        chosen = list(picked)
        if limit is not None:
            chosen = chosen[-limit:] if limit > 0 else []
        return [t.to_json() for t in chosen]


def endpoint(log: DecisionLog, query: str) -> tuple[int, bytes]:
    """``GET /debug/decisions?pod=&since=&limit=``: (HTTP status, JSON body). ``pod`` keeps decisions whose
    ``namespace/name`` contains it, ``since`` those with a larger id (poll with the last id seen), ``limit``
    the newest that many. A bad parameter is a 400 naming it."""
    params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    ints: dict[str, int] = {}
    for name in ("since", "limit"):
        if name in params:
            try:
                ints[name] = int(params[name])
            except ValueError:
                msg = f"/debug/decisions: query parameter {name}: not an integer: {params[name]!r}"
                return 400, json.dumps({"error": msg}).encode()
            if ints[name] < 0:
                msg = f"/debug/decisions: query parameter {name}: must not be negative"
                return 400, json.dumps({"error": msg}).encode()
    docs = log.documents(params.get("pod") or None, ints.get("since", 0), ints.get("limit"))
    body = {"capacity": log.capacity, "recorded": log.total, "decisions": docs}
    return 200, json.dumps(body, separators=(",", ":")).encode()
