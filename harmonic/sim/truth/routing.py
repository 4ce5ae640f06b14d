"""Where calls really go: which replica of the callee a call reaches, by routing mode.

Modes follow Kubernetes Service ``trafficDistribution`` (and Istio locality load balancing with
failover, which behaves the same way here):

- ``random``: any ready endpoint, uniformly;
- ``preferZone`` (``PreferClose`` / ``PreferSameZone``): the endpoints in the caller's zone when any is
  ready there, else all of them;
- ``preferNode`` (``PreferSameNode``): the caller's node, else its zone, else all.

Among the chosen endpoints a call picks one uniformly, so a node gets calls in proportion to the
replicas it runs. A placement is ``node -> running replicas`` of one workload, counting only replicas
that can answer (on nodes that have not failed). Callers are taken as evenly loaded across their own
replicas when traffic shares are aggregated (``edge_locality``); the latency sampler follows each
request's actual path instead.
"""

from __future__ import annotations

from collections.abc import Mapping

Placement = Mapping[str, int]


def callee_shares(caller: str, callee: Placement, zone_of: Mapping[str, str], mode: str) -> dict[str, float]:
    """node -> probability that a call made from ``caller`` lands on that node."""
    candidates: Mapping[str, int] = callee
    if mode == "preferNode" and callee.get(caller, 0) > 0:
        return {caller: 1.0}
    if mode in ("preferZone", "preferNode"):
        zone = zone_of.get(caller, "")
        local = {n: c for n, c in callee.items() if c > 0 and zone_of.get(n, "") == zone}
        if local:
            candidates = local
    total = sum(c for c in candidates.values() if c > 0)
    if total <= 0:
        return {}
    return {n: c / total for n, c in candidates.items() if c > 0}


def edge_locality(
    caller: Placement, callee: Placement, zone_of: Mapping[str, str], mode: str
) -> tuple[float, float]:
    """(share of calls staying on the caller's node, share staying in its zone)."""
    n_caller = sum(caller.values())
    if n_caller <= 0:
        return 0.0, 0.0
    same_node = same_zone = 0.0
    for node, count in caller.items():
        if count <= 0:
            continue
        zone = zone_of.get(node, "")
        for dst, p in callee_shares(node, callee, zone_of, mode).items():
            if dst == node:
                same_node += count * p
            if zone_of.get(dst, "") == zone:
                same_zone += count * p
    return same_node / n_caller, same_zone / n_caller


def arrivals_per_replica(
    callers: list[tuple[Placement, float]], callee: Placement, zone_of: Mapping[str, str], mode: str
) -> dict[str, float]:
    """Calls/s reaching one replica of ``callee`` on each node, given its callers as
    (placement, calls/s they make to it)."""
    out: dict[str, float] = {}
    for placement, rate in callers:
        n = sum(placement.values())
        if n <= 0 or rate <= 0:
            continue
        for node, count in placement.items():
            if count <= 0:
                continue
            for dst, p in callee_shares(node, callee, zone_of, mode).items():
                out[dst] = out.get(dst, 0.0) + rate * (count / n) * p
    return {n: r / callee[n] for n, r in out.items() if callee.get(n, 0) > 0}
