"""What reserving moved pods' replacements costs the scheduling path (``harmonic.scheduler.reservations``).

    python benchmarks/reservations.py --nodes 500 --pods 2000 --open 50 --repeat 3

Schedules ``--pods`` new pods (2 CPUs, 4Gi each, one ReplicaSet per 10 pods) on ``--nodes`` nodes
with the default profile, on the in-memory cluster (inline binding), three ways:

- ``none``: no reservation (the scheduler as before);
- ``open``: ``--open`` reservations held for owners none of the pods has, so every new pod pays the
  owner lookup and every cycle the expiry check, and none is consumed;
- ``consumed``: one reservation per pod, each on a node chosen at random: every pod is a replacement,
  nominated (status patch, nominator) and tried on its reserved node first.

Prints CPU seconds per 1,000 pods (``time.process_time``: the machine is shared, wall time is not a
figure), the minimum and median over ``--repeat`` runs, and for ``consumed`` how many landed on their
reserved node. Figures are printed, never assumed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from harmonic.testing import node, pod
from harmonic.testing.harness import Harness


def _pods(count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        owner = f"rs-{i // 10}"
        obj: dict[str, Any] = pod(f"p{i:06d}").req(cpu="2", memory="4Gi").owner("ReplicaSet", owner).obj()
        out.append(obj)
    return out


def run(nodes: int, count: int, mode: str, held: int, seed: int) -> tuple[float, int]:
    """CPU seconds to create and schedule ``count`` pods, and how many reservations landed."""
    h = Harness()
    h.add_nodes([node(f"n{i:04d}").cap(cpu="32", memory="128Gi", pods=110).obj() for i in range(nodes)])
    h.schedule()
    landed = 0

    def ended(r: Any, outcome: str, p: str, n: str) -> None:
        nonlocal landed
        landed += outcome == "landed"

    rs = h.scheduler.reservations
    rs.on_outcome = ended
    rng = random.Random(seed)
    pods = _pods(count)
    if mode == "open":
        for k in range(held):
            rs.reserve(f"uid-ReplicaSet-nobody-{k}", f"n{k % nodes:04d}", 3600, f"default/moved-{k}")
    elif mode == "consumed":
        for obj in pods:
            owner = obj["metadata"]["ownerReferences"][0]["uid"]
            rs.reserve(owner, f"n{rng.randrange(nodes):04d}", 3600, "default/moved")
    start = time.process_time()
    h.add_pods(pods)
    h.schedule()
    cpu = time.process_time() - start
    assert len(h.placement()) == count, "every pod should be bound"
    return cpu, landed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--open", type=int, default=50, help="reservations held for nobody in mode 'open'")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{args.nodes} nodes, {args.pods} pods, default profile, in-memory cluster; CPU s per 1,000 pods")
    print(f"{'mode':<10} {'min':>8} {'median':>8}  landed")
    for mode in ("none", "open", "consumed"):
        runs = [run(args.nodes, args.pods, mode, args.open, seed) for seed in range(args.repeat)]
        per_k = [cpu * 1000 / args.pods for cpu, _ in runs]
        landed = runs[-1][1]
        shown = f"{landed}/{args.pods}" if mode == "consumed" else "-"
        print(f"{mode:<10} {min(per_k):8.3f} {statistics.median(per_k):8.3f}  {shown}")


if __name__ == "__main__":
    main()
