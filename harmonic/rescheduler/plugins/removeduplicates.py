"""RemoveDuplicates — balance. Spreads pods of one owner with identical images: on each node, pods
beyond the owner's even share (ceil(replicas / target nodes)) are evicted, where target nodes are the
nodes the duplicates' distinct tolerations / node selectors / required affinities accept (only when
more than one). A move: each replacement must land on another node.

Args: ``namespaces``, ``excludeOwnerKinds``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import ClassVar

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, tolerated
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler.args import Namespaces
from harmonic.rescheduler.budget import EvictionLimitError
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.plugins.nodeaffinity import matches_required


class RemoveDuplicatesArgs(PluginArgs):
    namespaces: Namespaces | None = None
    exclude_owner_kinds: tuple[str, ...] = ()


OwnerKey = tuple[str, str, str, str]


def _images(p: Pod) -> list[str]:
    return sorted(str(c.get("image", "")) for c in p.spec.get("containers") or ())


def _placement_key(p: Pod) -> tuple[object, ...]:
    aff = ((p.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return (frozenset(p.tolerations), repr(aff), tuple(sorted(p.node_selector.items())))


class RemoveDuplicates(BalancePlugin):
    NAME: ClassVar[str] = "RemoveDuplicates"
    Args = RemoveDuplicatesArgs
    args: RemoveDuplicatesArgs

    def balance(self, nodes: list[Node]) -> None:
        keep = pod_filter(self.handle, self.args.namespaces)
        duplicates: dict[OwnerKey, dict[str, list[Pod]]] = defaultdict(lambda: defaultdict(list))
        occurrences: dict[OwnerKey, int] = defaultdict(int)
        for n in nodes:
            seen: dict[str, list[list[str]]] = {}
            for p in self.handle.pods_on(n.name):
                if (
                    not keep(p)
                    or not p.owners
                    or any(o.kind in self.args.exclude_owner_kinds for o in p.owners)
                ):
                    continue
                images = _images(p)
                digest = "#".join(images)
                keys: list[str] = []
                for o in p.owners:
                    occurrences[(p.namespace, o.kind, o.name, digest)] += 1
                    keys += [f"{p.namespace}/{o.kind}/{o.name}/{img}" for img in images]
                keys.sort()
                first = keys[0] if keys else ""
                if any(k == keys for k in seen.get(first, ())):
                    for o in p.owners:
                        duplicates[(p.namespace, o.kind, o.name, digest)][n.name].append(p)
                else:
                    seen.setdefault(first, []).append(keys)
        for owner, per_node in duplicates.items():
            targets = self._target_nodes(per_node, nodes)
            if len(targets) < 2:
                continue
            upper = math.ceil(occurrences[owner] / len(targets))
            for node_name, pods in per_node.items():
                if len(pods) + 1 <= upper:
                    continue
                for p in pods[upper - 1 :]:
                    try:
                        self.handle.evictor.evict(
                            p,
                            self.NAME,
                            f"more than {upper} replicas of {owner[1]}/{owner[2]} on {node_name}",
                            move=True,
                        )
                    except EvictionLimitError as e:
                        if e.scope == "total":
                            return
                        if e.scope == "node":
                            break

    def _target_nodes(self, per_node: dict[str, list[Pod]], nodes: list[Node]) -> set[str]:
        distinct: dict[tuple[object, ...], Pod] = {}
        for pods in per_node.values():
            for p in pods:
                distinct.setdefault(_placement_key(p), p)
        out: set[str] = set()
        for p in distinct.values():
            match = {
                n.name
                for n in nodes
                if all(tolerated(p.tolerations, t) for t in n.taints if t.effect in (NO_SCHEDULE, NO_EXECUTE))
                and matches_required(p, n)
            }
            if len(match) > 1:
                out |= match
        return out
