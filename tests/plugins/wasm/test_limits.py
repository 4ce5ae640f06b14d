"""A misbehaving guest is stopped by its limits and gets an Error status naming the plugin and the
cause; the scheduler, and the guest's next call, carry on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import PluginError
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.guest import EpochClock
from harmonic.plugins.wasm.plugin import TEMPLATE
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness
from tests.plugins.wasm.conftest import guest_config

MEM = '(memory (export "memory") 1)'
SCORES = '(import "k8s.io/scheduler" "result.scores" (func $scores (param i32 i32)))'
REASON = '(import "k8s.io/scheduler" "result.status_reason" (func $reason (param i32 i32)))'
CODES = '(import "k8s.io/scheduler" "result.node_codes" (func $codes (param i32 i32)))'
COUNT = '(import "harmonic.io/nodes" "count" (func $count (result i32)))'


def _score_body(body: str, imports: str = "") -> str:
    return f'(module {imports} {MEM} (func (export "score") (result i32) {body}))'


#: Guests that misbehave while scoring, and the cause their Error must name.
MISBEHAVING = [
    (
        "endless loop, fuel",
        _score_body("(loop $l (br $l)) (i32.const 0)"),
        {"maxFuelPerCall": 100_000},
        "ran out of fuel (maxFuelPerCall 100000)",
    ),
    (
        "endless loop, deadline",
        _score_body("(loop $l (br $l)) (i32.const 0)"),
        {"maxFuelPerCall": 10**15, "callTimeout": "50ms"},
        "timed out after 0.05s",
    ),
    (
        "memory bomb",
        _score_body("(loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))) unreachable"),
        {"maxMemoryPages": 64},
        "(memory at its limit of 64 pages)",
    ),
    ("trap", _score_body("unreachable"), {}, "trapped: "),
    (
        "huge return",
        _score_body("(call $scores (i32.const 0) (i32.const 2000000000)) (i32.const 0)", SCORES),
        {},
        "broke the ABI: result.scores: [0, 2000000000) is outside the guest's memory",
    ),
    (
        "too few scores",
        _score_body("(call $scores (i32.const 0) (i32.const 8)) (i32.const 0)", SCORES),
        {},
        "broke the ABI: result.scores: 8 bytes for 3 nodes (want 24)",
    ),
    (
        "huge reason",
        _score_body("(call $reason (i32.const 0) (i32.const 60000)) (i32.const 1)", REASON),
        {},
        "broke the ABI: result.status_reason: 60000 bytes (at most 4096)",
    ),
    ("success without scores", _score_body("(i32.const 0)"), {}, "score: returned success without scores"),
    ("garbage status", _score_body("(i32.const 77)"), {}, "score: returned status code 77"),
    (
        "error status",
        f'(module {REASON} {MEM} (data (i32.const 0) "no quota") '
        '(func (export "score") (result i32) (call $reason (i32.const 0) (i32.const 8)) (i32.const 1)))',
        {},
        "score: no quota",
    ),
]


def _nodes(n: int = 3) -> Snapshot:
    snap = Snapshot()
    for i in range(n):
        snap.set_node(parse_node(node(f"n{i}").obj()))
    return snap


def _plugin(path: str, **args: Any) -> Any:
    a = WasmPluginArgs.model_validate({"guestURL": path, **args})
    return TEMPLATE.make("Guest", a)(a, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "text", "args", "cause"), MISBEHAVING, ids=[m[0] for m in MISBEHAVING])
def test_misbehaving_guest_gets_an_error_naming_plugin_and_cause(
    wat: Callable[[str], str], name: str, text: str, args: dict[str, Any], cause: str
) -> None:
    pl = _plugin(wat(text), **args)
    snap = _nodes()
    with pytest.raises(PluginError) as e:
        pl.score(CycleState(), parse_pod(pod("p").obj()), snap, snap.order)
    assert str(e.value).startswith('wasm guest "Guest": score: ')
    assert cause in str(e.value)


def test_a_trapped_guest_is_rebuilt_and_answers_the_next_call(wat: Callable[[str], str]) -> None:
    # Traps when asked about a single node, scores larger batches (zeros) otherwise.
    text = (
        f"(module {SCORES} {COUNT} {MEM}"
        ' (func (export "score") (result i32)'
        "  (if (i32.eq (call $count) (i32.const 1)) (then unreachable))"
        "  (call $scores (i32.const 64) (i32.mul (call $count) (i32.const 8))) (i32.const 0)))"
    )
    pl = _plugin(wat(text))
    snap = _nodes()
    p = parse_pod(pod("p").obj())
    with pytest.raises(PluginError, match="trapped: wasm trap: wasm `unreachable` instruction executed"):
        pl.score(CycleState(), p, snap, snap.order[:1])
    assert pl.score(CycleState(), p, snap, snap.order).tolist() == [0, 0, 0]


def test_cycle_budget_caps_all_calls_of_one_cycle(wat: Callable[[str], str]) -> None:
    # Each call spins until its 30 ms deadline: the calls of one cycle use up its 80 ms budget (the
    # last one cut short to what was left), then are refused; a new cycle has a new budget.
    text = _score_body("(loop $l (br $l)) (i32.const 0)")
    pl = _plugin(wat(text), maxFuelPerCall=10**15, callTimeout="30ms", cycleBudget="80ms")
    snap = _nodes()
    p = parse_pod(pod("p").obj())
    state = CycleState()
    causes = []
    for _ in range(5):
        with pytest.raises(PluginError) as e:
            pl.score(state, p, snap, snap.order)
        causes.append(str(e.value))
    assert "timed out after 0.03s" in causes[0]
    assert "cycle budget of 80ms used up" in causes[-1]
    assert all("timed out" in c for c in causes[: causes.index(causes[-1])])
    with pytest.raises(PluginError, match=r"timed out after 0\.03s"):
        pl.score(CycleState(), p, snap, snap.order)


def test_bad_node_codes_are_garbage(wat: Callable[[str], str]) -> None:
    text = (
        f'(module {CODES} {MEM} (data (i32.const 0) "\\09\\00\\00")'
        ' (func (export "filter") (result i32) (call $codes (i32.const 0) (i32.const 3)) (i32.const 0)))'
    )
    pl = _plugin(wat(text))
    snap = _nodes()
    with pytest.raises(PluginError, match=r"result.node_codes: code 9 is not 0, 2 or 3"):
        pl.filter(CycleState(), parse_pod(pod("p").obj()), snap, snap.order)


def test_scheduler_survives_a_trapping_guest(wat: Callable[[str], str]) -> None:
    """The pod's cycle fails with an Error status naming the guest and the cause; nothing crashes."""
    path = wat(_score_body("unreachable"))
    cfg = guest_config("Crashy", {"guestURL": path}, enable="score")
    h = Harness(cfg)
    # Two nodes: with one feasible node the scheduler does not score at all.
    h.add_nodes([node("n1").obj(), node("n2").obj()])
    h.add_pods([pod("a").obj()])
    h.schedule()
    assert h.placement() == {}
    assert 'wasm guest "Crashy": score: trapped' in (h.failure("a") or "")


def test_wasi_guest_sees_no_files_or_environment_unless_granted(
    guests: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("s3cret")
    snap = _nodes(1)
    p = parse_pod(pod("p").obj())

    def reason(**args: Any) -> str:
        v = _plugin(str(guests["wasiprobe"]), **args).filter(CycleState(), p, snap, snap.order)
        return v.reasons[0][0]

    assert reason() == "file=DENIED env=UNSET"
    granted = reason(preopens=[{"hostPath": str(tmp_path), "guestPath": "/data"}], env={"SECRET": "x"})
    assert granted == "file=s3cret env=x"


def test_filter_rejecting_all_nodes_by_status(wat: Callable[[str], str]) -> None:
    pl = _plugin(wat(f'(module {MEM} (func (export "filter") (result i32) (i32.const 3)))'))
    snap = _nodes()
    v = pl.filter(CycleState(), parse_pod(pod("p").obj()), snap, snap.order)
    assert np.all(v.code == 3)


def test_the_epoch_catches_up_after_a_late_wakeup() -> None:
    # A ticker that sleeps 5 ms but wakes at these instants must have added one tick per 5 ms that
    # passed (1, 3, 3, 18, 18), not one per wakeup (1, 2, 3, 4, 5): otherwise a loaded machine, whose
    # ticker wakes late, stretches every callTimeout.
    clock = EpochClock(start=0.0)
    total, seen = 0, []
    for t in (0.006, 0.0151, 0.0152, 0.0901, 0.0902):
        total += clock.due(t)
        seen.append(total)
    assert seen == [1, 3, 3, 18, 18]


_PRINTER = """(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "\\10") (data (i32.const 4) "\\02") (data (i32.const 16) "ok")
  (data (i32.const 8) "\\20") (data (i32.const 12) "\\05") (data (i32.const 32) "oops!")
  (func (export "prescore") (result i32)
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 100))) (i32.const 0))
  (func (export "filter") (result i32)
    (drop (call $w (i32.const 2) (i32.const 8) (i32.const 1) (i32.const 100))) unreachable))"""


def test_a_failed_call_carries_only_its_own_output(wat: Callable[[str], str]) -> None:
    # prescore prints "ok" to stdout and succeeds; filter prints "oops!" to stderr and traps.
    pl = _plugin(wat(_PRINTER))
    snap = _nodes()
    p = parse_pod(pod("p").obj())
    for _ in range(3):
        assert pl.pre_score(CycleState(), p, snap, snap.order) is None
    with pytest.raises(PluginError) as e:
        pl.filter(CycleState(), p, snap, snap.order)
    assert str(e.value).endswith("instruction executed\noops!")
