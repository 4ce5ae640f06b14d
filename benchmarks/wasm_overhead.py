"""The cost of a WebAssembly guest call: fixed per call and per candidate node, and the guest's memory.

    python benchmarks/wasm_overhead.py [--calls 2000]

Builds the example guests (scripts/build_wasm_guests.py), then times, in CPU time of this process
(steadier than wall time on a shared machine): an export that returns at once (the floor of one
call), and the NodeNumber guest's PreScore + Score over 1, 500 and 5,000 candidate nodes, next to the
same scoring done by Python code (last characters of the names, compared with numpy). Prints
microseconds per call and the guest's linear memory after the run.

Then the same rule under kube-scheduler-wasm-extension's per-node ABI: upstream's own NodeNumber guest
(examples/wasm/upstream/nodenumber.wasm, TinyGo) through PreFilter + PreScore + one Score call per
node, at ``--upstream-nodes`` (500 and 5,000), and the TaintToleration guest's Filter over the whole
Node (``harmonic.io/nodes.fields``), batched, at the same sizes.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.plugin import TEMPLATE
from harmonic.testing import node, pod

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM_NODE_NUMBER = ROOT / "examples" / "wasm" / "upstream" / "nodenumber.wasm"
NOOP = '(module (memory (export "memory") 1) (func (export "prescore") (result i32) (i32.const 0)))'


def _guests() -> dict[str, Path]:
    spec = importlib.util.spec_from_file_location("build", ROOT / "scripts" / "build_wasm_guests.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_all()  # type: ignore[no-any-return]


def _plugin(path: str, **extra: str) -> Any:
    args = WasmPluginArgs.model_validate({"guestURL": path, **extra})
    return TEMPLATE.make("Bench", args)(args, None)  # type: ignore[arg-type]


def _per_call_us(fn: Any, calls: int) -> float:
    fn()
    t = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - t) / calls * 1e6


def _numpy_node_number(snap: Snapshot, slots: np.ndarray, digit: int) -> np.ndarray:
    """What the guest computes, as a vectorised Python plugin would (for scale)."""
    last = np.array([n[-1] for n in snap.names()[slots]])
    return np.where(last == str(digit), 10, 0).astype(np.int64)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--upstream-nodes", type=int, nargs="*", default=[500, 5000])
    ap.add_argument("--upstream-cycles", type=int, default=5, help="cycles timed per size (per-node ABI)")
    args = ap.parse_args(argv)
    guests = _guests()
    snap = Snapshot()
    for i in range(5000):
        snap.set_node(parse_node(node(f"node-{i}").obj()))
    p = parse_pod(pod("pod-7").obj())
    with tempfile.TemporaryDirectory() as tmp:
        noop_path = Path(tmp) / "noop.wat"
        noop_path.write_text(NOOP)
        noop = _plugin(str(noop_path))
        floor = _per_call_us(lambda: noop.pre_score(CycleState(), p, snap, snap.order[:1]), args.calls)
    print(f"empty export, one call: {floor:.1f} us")
    nn = _plugin(str(guests["nodenumber"]))
    for n in (1, 500, 5000):
        slots = snap.order[:n]

        def cycle(slots: np.ndarray = slots) -> None:
            state = CycleState()
            nn.pre_score(state, p, snap, slots)
            nn.score(state, p, snap, slots)

        wasm = _per_call_us(cycle, max(1, args.calls // max(1, n // 100)))
        py = _per_call_us(
            lambda slots=slots: _numpy_node_number(snap, slots, 7), max(1, args.calls // max(1, n // 100))
        )
        print(
            f"NodeNumber PreScore+Score over {n:>5} nodes: {wasm:8.1f} us (the same in Python: {py:8.1f} us)"
        )
    pages = nn.instance.memory.size(nn.instance.store)
    print(
        f"NodeNumber guest memory after the run: {pages} pages ({pages * 64} KiB); module {guests['nodenumber'].stat().st_size} bytes"
    )
    _upstream(snap, p, args.upstream_nodes, args.upstream_cycles)
    _whole_node(guests, args.upstream_nodes, max(1, args.calls // 100))
    return 0


def _upstream(snap: Snapshot, p: Any, sizes: list[int], cycles: int) -> None:
    """Upstream's NodeNumber guest, per node: PreFilter + PreScore + a Score call per node."""
    # A cycle of 5,000 per-node calls outlasts the default 2s cycle budget on a loaded machine.
    up = _plugin(str(UPSTREAM_NODE_NUMBER), cycleBudget="60s")
    for n in sizes:
        slots = snap.order[:n]

        def cycle(slots: np.ndarray = slots) -> None:
            state = CycleState()
            up.pre_filter(state, p, snap)
            up.pre_score(state, p, snap, slots)
            up.score(state, p, snap, slots)

        per_cycle = _per_call_us(cycle, cycles)
        print(
            f"upstream NodeNumber (per-node ABI) PreFilter+PreScore+Score over {n:>5} nodes: "
            f"{per_cycle / 1000:8.1f} ms ({per_cycle / n:5.1f} us per node)"
        )
    pages = up.instance.memory.size(up.instance.store)
    print(
        f"upstream NodeNumber guest memory: {pages} pages ({pages * 64} KiB); "
        f"module {UPSTREAM_NODE_NUMBER.stat().st_size} bytes"
    )


def _whole_node(guests: dict[str, Path], sizes: list[int], calls: int) -> None:
    """The TaintToleration guest's Filter over nodes with two taints each, reading the whole taint list."""
    tt = _plugin(str(guests["tainttoleration"]))
    snap = Snapshot()
    for i in range(max(sizes)):
        raw = node(f"node-{i}").obj()
        raw["spec"] = {
            "taints": [
                {"key": f"k{i % 7}", "value": "v", "effect": "NoSchedule"},
                {"key": "shared", "effect": "PreferNoSchedule"},
            ]
        }
        snap.set_node(parse_node(raw))
    raw_pod = pod("pod-7").obj()
    raw_pod["spec"]["tolerations"] = [{"key": "k3", "operator": "Exists"}]
    p = parse_pod(raw_pod)
    for n in sizes:
        slots = snap.order[:n]
        us = _per_call_us(lambda slots=slots: tt.filter(CycleState(), p, snap, slots), calls)
        print(f"TaintToleration guest (batched, whole Node) Filter over {n:>5} nodes: {us:8.1f} us")


if __name__ == "__main__":
    sys.exit(main())
