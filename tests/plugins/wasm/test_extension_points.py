"""Each extension point a guest can export, through small WAT guests: what the guest returns becomes
the framework's result, and the guest sees the inputs of that point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import EXTENSION_POINTS, PluginError
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.plugin import TEMPLATE
from harmonic.testing import node, pod

MEM = '(memory (export "memory") 1)'
SCHED = "k8s.io/scheduler"


def _imp(module: str, name: str, sig: str, alias: str) -> str:
    return f'(import "{module}" "{name}" (func ${alias} {sig}))'


NODE_NAME = _imp("k8s.io/api", "nodeName", "(param i32 i32) (result i32)", "node_name")
REASON = _imp(SCHED, "result.status_reason", "(param i32 i32)", "reason")


def _plugin(wat: Callable[[str], str], text: str) -> Any:
    a = WasmPluginArgs.model_validate({"guestURL": wat(text)})
    return TEMPLATE.make("G", a)(a, None)  # type: ignore[arg-type]


def _snap() -> Snapshot:
    snap = Snapshot()
    for n in ("a", "b", "c"):
        snap.set_node(parse_node(node(n).obj()))
    return snap


POD = parse_pod(pod("p").obj())


def test_prefilter_narrows_nodes_and_can_skip(wat: Callable[[str], str]) -> None:
    names = _imp(SCHED, "result.node_names", "(param i32 i32)", "names")
    pl = _plugin(
        wat,
        f'(module {names} {MEM} (data (i32.const 0) "a\\00c\\00")'
        ' (func (export "prefilter") (result i32) (call $names (i32.const 0) (i32.const 4)) (i32.const 0)))',
    )
    result, st = pl.pre_filter(CycleState(), POD, _snap())
    assert st is None and result.node_names == frozenset({"a", "c"})
    skip = _plugin(wat, f'(module {MEM} (func (export "prefilter") (result i32) (i32.const 5)))')
    result, st = skip.pre_filter(CycleState(), POD, _snap())
    assert result is None and st.code == Code.SKIP


def test_normalize_score_rewrites_the_scores(wat: Callable[[str], str]) -> None:
    # score: 1, 2, 3 (from data); normalizescore: reads them back and multiplies by 10.
    scores = _imp(SCHED, "result.scores", "(param i32 i32)", "scores")
    listing = _imp(SCHED, "nodeScoreList", "(param i32 i32) (result i32)", "list")
    normalized = _imp(SCHED, "result.normalized_score_list", "(param i32 i32)", "norm")
    data = "".join(f"\\{v:02x}\\00\\00\\00\\00\\00\\00\\00" for v in (1, 2, 3))
    text = (
        f'(module {scores} {listing} {normalized} {MEM} (data (i32.const 0) "{data}")'
        ' (func (export "score") (result i32) (call $scores (i32.const 0) (i32.const 24)) (i32.const 0))'
        ' (func (export "normalizescore") (result i32) (local $i i32)'
        "  (drop (call $list (i32.const 100) (i32.const 24)))"
        "  (loop $l (i64.store (i32.add (i32.const 100) (local.get $i))"
        "     (i64.mul (i64.load (i32.add (i32.const 100) (local.get $i))) (i64.const 10)))"
        "   (local.set $i (i32.add (local.get $i) (i32.const 8)))"
        "   (br_if $l (i32.lt_u (local.get $i) (i32.const 24))))"
        "  (call $norm (i32.const 100) (i32.const 24)) (i32.const 0)))"
    )
    pl = _plugin(wat, text)
    snap = _snap()
    raw = pl.score(CycleState(), POD, snap, snap.order)
    assert raw.tolist() == [1, 2, 3] and pl.has_normalize
    assert pl.normalize_score(CycleState(), POD, snap, snap.order, raw).tolist() == [10, 20, 30]


def _node_echo(export: str, result: str = "(result i32)", ret: str = "(i32.const 0)") -> str:
    """An export that reads nodeName and rejects (code 2, reason = the node name) unless it is "ok"."""
    return (
        f'(func (export "{export}") {result}'
        "  (local $n i32) (local.set $n (call $node_name (i32.const 200) (i32.const 50)))"
        "  (if (i32.and (i32.eq (local.get $n) (i32.const 2)) (i32.eq (i32.load16_u (i32.const 200)) (i32.const 0x6b6f)))"
        f"    (then (return {ret})))"
        "  (call $reason (i32.const 200) (local.get $n))"
        f"  (return {'(i64.const 2)' if 'i64' in result else '(i32.const 2)'}))"
    )


@pytest.mark.parametrize(
    ("export", "method"), [("reserve", "reserve"), ("prebind", "pre_bind"), ("bind", "bind")]
)
def test_binding_phase_points_see_the_node_and_return_statuses(
    wat: Callable[[str], str], export: str, method: str
) -> None:
    pl = _plugin(wat, f"(module {NODE_NAME} {REASON} {MEM} {_node_echo(export)})")
    assert getattr(pl, method)(CycleState(), POD, "ok") is None
    st = getattr(pl, method)(CycleState(), POD, "node-9")
    assert st.code == Code.UNSCHEDULABLE and st.reasons == ("node-9",)


def test_permit_wait_carries_its_timeout(wat: Callable[[str], str]) -> None:
    # 0x1F4 (500 ms) << 32 | 4 (Wait)
    pl = _plugin(wat, f'(module {MEM} (func (export "permit") (result i64) (i64.const 0x1F400000004)))')
    st, timeout = pl.permit(CycleState(), POD, "a")
    assert st.code == Code.WAIT and timeout == 0.5


def test_bind_skip_and_error_statuses(wat: Callable[[str], str]) -> None:
    skip = _plugin(wat, f'(module {MEM} (func (export "bind") (result i32) (i32.const 5)))')
    assert skip.bind(CycleState(), POD, "a").code == Code.SKIP
    trap = _plugin(wat, f'(module {MEM} (func (export "bind") (result i32) unreachable))')
    st = trap.bind(CycleState(), POD, "a")
    assert st.code == Code.ERROR and st.message.startswith('wasm guest "G": bind: trapped')


def test_unreserve_and_postbind_failures_are_logged_not_raised(
    wat: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    pl = _plugin(
        wat,
        f'(module {MEM} (func (export "reserve") (result i32) (i32.const 0))'
        ' (func (export "unreserve") unreachable) (func (export "postbind") unreachable))',
    )
    pl.unreserve(CycleState(), POD, "a")
    pl.post_bind(CycleState(), POD, "a")
    assert [r.getMessage().split(":")[1].strip() for r in caplog.records] == ["unreserve", "postbind"]


def test_class_implements_exactly_the_exported_points(wat: Callable[[str], str]) -> None:
    pl = _plugin(
        wat,
        f'(module {MEM} (func (export "filter") (result i32) (i32.const 0))'
        ' (func (export "permit") (result i64) (i64.const 0)))',
    )
    points = {p for p, base in EXTENSION_POINTS.items() if isinstance(pl, base)}
    assert points == {"filter", "permit"}


def test_pod_accessors(wat: Callable[[str], str]) -> None:
    """A filter that rejects with the pod's label "team" (or "none") as the reason."""
    label = _imp("harmonic.io/pod", "label", "(param i32 i32 i32 i32) (result i32)", "label")
    text = (
        f'(module {label} {REASON} {MEM} (data (i32.const 0) "team") (data (i32.const 8) "none")'
        ' (func (export "filter") (result i32) (local $n i32)'
        "  (local.set $n (call $label (i32.const 0) (i32.const 4) (i32.const 100) (i32.const 64)))"
        "  (if (i32.lt_s (local.get $n) (i32.const 0))"
        "    (then (call $reason (i32.const 8) (i32.const 4)))"
        "    (else (call $reason (i32.const 100) (local.get $n))))"
        "  (i32.const 2)))"
    )
    pl = _plugin(wat, text)
    snap = _snap()
    labelled = parse_pod(pod("q").label("team", "blue").obj())
    assert pl.filter(CycleState(), labelled, snap, snap.order).reasons == [("blue",)]
    v = pl.filter(CycleState(), POD, snap, snap.order)
    assert v.reasons == [("none",)] and np.all(v.code == Code.UNSCHEDULABLE)


def test_guest_error_in_prefilter_is_a_plugin_error(wat: Callable[[str], str]) -> None:
    pl = _plugin(wat, f'(module {MEM} (func (export "prefilter") (result i32) (i32.const 1)))')
    with pytest.raises(PluginError, match='wasm guest "G": prefilter: error'):
        pl.pre_filter(CycleState(), POD, _snap())
