"""The cost of a WebAssembly guest call: fixed per call and per candidate node, and the guest's memory.

    python benchmarks/wasm_overhead.py [--calls 2000]

Builds the example guests (scripts/build_wasm_guests.py), then times, in CPU time of this process
(steadier than wall time on a shared machine): an export that returns at once (the floor of one
call), and the NodeNumber guest's PreScore + Score over 1, 500 and 5,000 candidate nodes, next to the
same scoring done by Python code (last characters of the names, compared with numpy). Prints
microseconds per call and the guest's linear memory after the run.
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
NOOP = '(module (memory (export "memory") 1) (func (export "prescore") (result i32) (i32.const 0)))'


def _guests() -> dict[str, Path]:
    spec = importlib.util.spec_from_file_location("build", ROOT / "scripts" / "build_wasm_guests.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_all()  # type: ignore[no-any-return]


def _plugin(path: str) -> Any:
    args = WasmPluginArgs.model_validate({"guestURL": path})
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
