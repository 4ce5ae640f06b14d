"""One-line answers to "why this node?" and "why no node?", from what a scheduling cycle recorded.

``score_verdict`` compares the chosen node with the runner-up (the best-scoring other node) plugin by
plugin over the weighted scores, so the line says which plugins decided it and by how much:
``node-c0 won by 310 over node-b1: CommunicationAffinity +335, NodeResourcesFit -16``. The scheduler
writes it into the pod's ``Scheduled`` event and the decision explorer shows it first.

``closest_node`` reads a failed decision's filter rows for the change that would most plausibly let the
pod in: a node stopped by one resolvable reason. Filters stop at the first plugin that rejects a node,
so the line says which plugin stopped it, not that every later filter would pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Plugins named in a verdict; the rest are counted ("2 more"), so the line stays short enough for an
#: Event note beside kube-scheduler's own text.
MAX_PLUGINS = 4
#: Longest verdict, in characters (an Event note holds 1,024).
MAX_LENGTH = 300


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_LENGTH else text[: MAX_LENGTH - 4] + " ..."


def score_verdict(
    names: Sequence[str], total: np.ndarray, weighted: Mapping[str, np.ndarray], chosen: int
) -> str:
    """The verdict of a scored decision. ``names[i]`` is the i-th feasible node, ``total[i]`` its
    total, ``weighted[plugin][i]`` each plugin's weighted score and ``chosen`` the index picked."""
    node = names[chosen]
    if len(names) == 1:
        return f"{node} was the only feasible node"
    best = int(total[chosen])
    others = total.copy()
    others[chosen] = np.iinfo(np.int64).min
    runner = int(np.argmax(others))
    margin = best - int(total[runner])
    if margin == 0:
        ties = int(np.count_nonzero(total == best))
        return _bounded(
            f"{node} tied with {names[runner]} at {best} ({ties} nodes with the best total; seeded draw)"
        )
    diffs = [(p, int(w[chosen]) - int(w[runner])) for p, w in weighted.items()]
    # Totals can carry more than the plugins listed (extenders' priorities): say so rather than let
    # the parts not add up.
    rest = margin - sum(d for _, d in diffs)
    if rest:
        diffs.append(("other", rest))
    decisive = sorted((d for d in diffs if d[1]), key=lambda d: (-abs(d[1]), d[0]))
    parts = [f"{p} {d:+d}" for p, d in decisive[:MAX_PLUGINS]]
    if len(decisive) > MAX_PLUGINS:
        parts.append(f"{len(decisive) - MAX_PLUGINS} more")
    return _bounded(f"{node} won by {margin} over {names[runner]}: {', '.join(parts)}")


def closest_node(rows: Sequence[Mapping[str, Any]]) -> str:
    """For a pod that fits nowhere: the filter rows (``{"node", "code", "plugin", "reasons"}``, one per
    rejected node) read for the nearest miss, or "" when there is none worth naming. A node rejected with
    ``Unschedulable`` for one reason is the nearest (that status is the one preemption or a change in the
    cluster can resolve); the most common such blocker is named, with one of its nodes."""
    single = [r for r in rows if r["code"] == "Unschedulable" and len(r["reasons"]) == 1 and r["plugin"]]
    if not single:
        return ""
    counts = Counter((r["plugin"], r["reasons"][0]) for r in single)
    (plugin, reason), n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    example = next(r["node"] for r in single if (r["plugin"], r["reasons"][0]) == (plugin, reason))
    where = example if n == 1 else f"{n} nodes (e.g. {example})"
    return _bounded(f"closest: {where} stopped only by {plugin} ({reason}); later filters not run there")


def verdict(doc: Mapping[str, Any]) -> str:
    """The one-line verdict of a decision document (``harmonic.framework.decisions.document``)."""
    choice, scores = doc.get("choice"), doc.get("scores")
    if doc["result"] in ("Unschedulable", "Error"):
        head = doc["message"].split(". ", 1)[0].rstrip(".") or doc["result"]
        near = closest_node(doc["filter"]) if doc["result"] == "Unschedulable" else ""
        return f"{head}. {near}" if near else head
    if doc["result"] == "Filtered":
        return f"{doc['nodes']['feasible']} of {doc['nodes']['evaluated']} nodes passed the filters"
    if doc["result"] == "Prioritized" and scores is not None:
        # No choice here: kube-scheduler adds these scores to its own. Say which node they favour.
        names = scores["nodes"]
        total = np.asarray(scores["total"], dtype=np.int64)
        weighted = {
            p["name"]: np.asarray(w, dtype=np.int64)
            for p, w in zip(scores["plugins"], scores["weighted"], strict=True)
        }
        best = score_verdict(names, total, weighted, int(np.argmax(total)))
        return f"scored the {len(names)} nodes kube-scheduler sent (no filter ran): {best}"
    if choice is None:
        return doc["result"]
    if scores is None:
        return f"{choice['node']}: {choice['tieBreak']}"
    names = scores["nodes"]
    weighted = {
        p["name"]: np.asarray(w, dtype=np.int64)
        for p, w in zip(scores["plugins"], scores["weighted"], strict=True)
    }
    return score_verdict(
        names, np.asarray(scores["total"], dtype=np.int64), weighted, names.index(choice["node"])
    )
