"""What a live feedback-moves round costs (``harmonic run --feedback-moves``): API requests and CPU.

    python benchmarks/feedback_moves_live.py --nodes 200 --pods-per-node 10 --rounds 5 --asks 1 5

Loads N nodes and N x K running pods, three times as many on the busiest tenth of the nodes
(ReplicaSet-owned, a PodDisruptionBudget per 50 pods allowing one disruption) into the API-server test
double (in this process, over real HTTP on loopback), then runs ``--rounds`` rounds of ``LiveMoves``
for each ``--asks`` count: every round asks that many pods of the busy nodes, picked at random, to move (``maxPerRound`` the same, so only the budgets, the cool-down and the no-churn
what-if refuse). Prints, per asks count, the requests the server counted per round, the outcomes, and
this process's CPU seconds per round (``time.process_time``; the double serves in this process, so
its time is included). The machine is shared: wall time is not reported. Figures are printed, never
assumed.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from rescheduler_api_calls import node, pdb, pod

from harmonic.cluster.transport import Transport, load_client
from harmonic.feedback.moves_live import LiveMoves, MoveArgs
from harmonic.feedback.relocate import MoveAsk
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.signals.metrics import FEEDBACK_MOVES
from harmonic.testing.apiserver import ApiServerDouble


def outcomes() -> Counter[str]:
    return Counter(
        {
            s.labels["outcome"]: s.value
            for m in FEEDBACK_MOVES.collect()
            for s in m.samples
            if s.name.endswith("_total")
        }
    )


def load(api: ApiServerDouble, nodes: int, per_node: int) -> list[str]:
    """The cluster; returns the pods on the busiest tenth of the nodes (which hold three times as
    many), the ones a move takes somewhere better by the default profile's scores."""
    hot = max(1, nodes // 10)
    placed = [f"n{i % nodes:04d}" for i in range(nodes * per_node)]
    placed += [f"n{i % hot:04d}" for i in range(2 * hot * per_node)]
    api.create_many("nodes", [node(i) for i in range(nodes)])
    api.create_many("pods", [pod(i, on) for i, on in enumerate(placed)])
    for i in range(len(placed)):
        api.set_status("pods", f"p{i:06d}", {"phase": "Running"}, namespace="default")
    for k in range(len(placed) // 50):
        api.create("poddisruptionbudgets", pdb(f"app-{k}"))
        api.set_status("poddisruptionbudgets", f"app-{k}", {"disruptionsAllowed": 1}, namespace="default")
    return [f"p{i:06d}" for i, on in enumerate(placed) if int(on[1:]) < hot]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--asks", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    registry = default_registry()
    profiles = load_config(None, registry).profiles
    print(
        f"{a.nodes} nodes, {a.pods_per_node} pods per node (x3 on a tenth); {a.rounds} rounds per asks count"
    )
    for asks in a.asks:
        # A fresh cluster per asks count: evicted pods are not recreated (the double has no controllers).
        with ApiServerDouble() as api, tempfile.TemporaryDirectory() as tmp:
            names = load(api, a.nodes, a.pods_per_node)
            transport = Transport(load_client(str(api.kubeconfig(Path(tmp) / "kubeconfig"))), qps=-1)
            moves = LiveMoves.build(transport, profiles, registry, MoveArgs(maxPerRound=asks))
            api.reset_stats()
            before = outcomes()
            cpu = 0.0
            for _ in range(a.rounds):
                picked = rng.sample(names, asks)
                batch = [(f"default/{n}", MoveAsk(f"default/{n}", "benchmark")) for n in picked]
                t = time.process_time()
                moves.round(batch)
                cpu += time.process_time() - t
            requests = api.stats().requests
            after = outcomes()
        got = {k: int(v - before.get(k, 0)) for k, v in after.items() if v != before.get(k, 0)}
        print(f"\n{asks} ask(s) per round:")
        print(f"  requests per round: { {k: v / a.rounds for k, v in sorted(requests.items())} }")
        print(f"  outcomes over {a.rounds} rounds: {got}")
        print(f"  CPU s per round (loop and double together): {cpu / a.rounds:.3f}")


if __name__ == "__main__":
    main()
