"""Host functions: what a guest may ask of the scheduler during one call, and how it answers.

Every function reads or writes the *call context* of the call in progress (the pod, the candidate
nodes, the results so far), the counterpart of kube-scheduler-wasm-extension's per-call ``stack``.
Functions that hand data to the guest follow its convention: the guest passes a buffer and its size,
the host writes only if the data fits and always returns the data's size, so a guest whose buffer was
too small calls again with a larger one. A guest that points outside its memory or hands back
malformed results faults: its call ends with an Error status naming the cause.
"""

from __future__ import annotations

import ctypes
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import wasmtime

from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.wasm import abi, ffi
from harmonic.plugins.wasm.node_fields import SECTIONS, NodeFields

if TYPE_CHECKING:
    from harmonic.plugins.wasm.guest import GuestInstance

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


class GuestFault(Exception):
    """The guest broke the ABI (bad pointer, malformed result); the message says how."""


_NO_SLOTS = np.zeros(0, dtype=np.int64)


class CallContext:
    """Inputs and results of one guest call."""

    __slots__ = (
        "cycle",
        "encoded",
        "events",
        "node_codes",
        "node_name",
        "node_names",
        "nominated",
        "pod",
        "reason",
        "result_map",
        "result_scores",
        "score_map",
        "scores",
        "slots",
        "snap",
        "statuses",
        "target",
    )

    def __init__(
        self,
        pod: Pod,
        snap: Snapshot | None = None,
        slots: np.ndarray = _NO_SLOTS,
        node_name: str = "",
        scores: np.ndarray | None = None,
    ) -> None:
        self.pod = pod
        self.snap = snap
        self.slots = slots
        self.node_name = node_name
        self.scores = scores
        self.cycle = 0
        self.reason = ""
        self.node_names: list[str] | None = None
        self.node_codes: np.ndarray | None = None
        self.result_scores: np.ndarray | None = None
        #: Encoded inputs, so a guest asking twice (buffer too small) does not pay twice.
        self.encoded: dict[Any, bytes] = {}
        # kube-scheduler-wasm-extension's ABI only: AddPod/RemovePod's pod, PostFilter's node codes,
        # NormalizeScore's scores by node name, and the results that come back by name.
        self.target: Pod | None = None
        self.statuses: dict[str, int] | None = None
        self.score_map: dict[str, int] | None = None
        self.result_map: dict[str, int] | None = None
        self.nominated = ""
        self.events: list[tuple[int, int]] | None = None


class NodeColumns:
    """Encodes the snapshot's node names and labels as string columns, rebuilding the flattened values
    only when the node set or a label's values change (not per cycle)."""

    def __init__(self) -> None:
        self._names: tuple[np.ndarray, abi.StringTable] | None = None
        self._labels: dict[str, tuple[object, int, abi.StringTable]] = {}

    def names(self, snap: Snapshot, slots: np.ndarray) -> bytes:
        arr = snap.names()
        if self._names is None or self._names[0] is not arr:
            self._names = (arr, abi.StringTable(list(arr)))
        return self._names[1].column(np.asarray(slots, dtype=np.int64))

    def label(self, snap: Snapshot, key: str, slots: np.ndarray) -> bytes:
        col = snap.label(key)
        cached = self._labels.get(key)
        if cached is None or cached[0] is not col or cached[1] != len(col.vocab):
            vocab = sorted(col.vocab, key=col.vocab.__getitem__)
            cached = (col, len(col.vocab), abi.StringTable(vocab))
            self._labels[key] = cached
        return cached[2].column(col.codes[np.asarray(slots, dtype=np.int64)].astype(np.int64))


I32, I64 = "i32", "i64"


Functions = dict[tuple[str, str], tuple[list[str], list[str], Callable[..., Any]]]


def define(linker: wasmtime.Linker, fns: Functions) -> list[Any]:
    """Define the host functions ``fns`` on ``linker``; returns what must be kept alive as long as the
    linker."""
    keep: list[Any] = []
    for (module, name), (params, results, f) in fns.items():
        ffi.define(linker, module, name, params, results, f, keep)
    return keep


def provided() -> frozenset[tuple[str, str]]:
    """The (module, name) pairs the host defines, to name a guest's unknown imports at load."""
    return frozenset(functions(None))


class Access:
    """Reading and writing a guest's memory, and the call context of the call in progress."""

    __slots__ = ("inst",)

    def __init__(self, inst: GuestInstance | None) -> None:
        self.inst = inst

    def ctx(self) -> CallContext:
        c = self.inst.ctx if self.inst is not None else None
        if c is None:
            raise GuestFault("host function called outside a scheduling call")
        return c

    def _base_and_size(self) -> tuple[int, int]:
        # Raw access to linear memory: wasmtime's Memory.read/write build a ctypes type per call.
        assert self.inst is not None
        mem, store = self.inst.memory, self.inst.store
        return ctypes.addressof(mem.data_ptr(store).contents), mem.data_len(store)

    def read(self, ptr: int, length: int, what: str) -> bytes:
        base, size = self._base_and_size()
        if ptr < 0 or length < 0 or ptr + length > size:
            raise GuestFault(f"{what}: [{ptr}, {ptr + length}) is outside the guest's memory")
        return ctypes.string_at(base + ptr, length)

    def give(self, data: bytes, buf: int, limit: int, what: str) -> int:
        """Write ``data`` at ``buf`` if it fits in ``limit``; its size either way."""
        if len(data) <= limit and data:
            self.write(data, buf, what)
        return len(data)

    def write(self, data: bytes, buf: int, what: str) -> None:
        base, size = self._base_and_size()
        if buf < 0 or buf + len(data) > size:
            raise GuestFault(f"{what}: buffer [{buf}, {buf + len(data)}) is outside the guest's memory")
        ctypes.memmove(base + buf, data, len(data))

    def cached(self, key: Any, make: Callable[[], bytes]) -> bytes:
        """``make()``, once per call (a guest whose buffer was too small asks twice)."""
        c = self.ctx()
        data = c.encoded.get(key)
        if data is None:
            data = c.encoded[key] = make()
        return data


def functions(inst: GuestInstance | None) -> Functions:
    """The host functions bound to ``inst`` (``None``: only to list them)."""
    columns = NodeColumns()
    fields = NodeFields()
    acc = Access(inst)
    ctx, read, give, cached = acc.ctx, acc.read, acc.give, acc.cached

    def snap_of(c: CallContext) -> Snapshot:
        if c.snap is None:
            raise GuestFault("no candidate nodes at this extension point")
        return c.snap

    def per_node(raw: bytes, width: int, what: str, dtype: str) -> np.ndarray:
        n = len(ctx().slots)
        if len(raw) != n * width:
            raise GuestFault(f"{what}: {len(raw)} bytes for {n} nodes (want {n * width})")
        return np.frombuffer(raw, dtype=dtype).copy()

    fns: Functions = {}

    def fn(module: str, name: str, params: list[str], results: list[str]) -> Callable[[F], F]:
        def register(f: F) -> F:
            fns[module, name] = (params, results, f)
            return f

        return register

    # -- k8s.io/api: the pod and node name, as upstream's guest SDK reads them.
    @fn(abi.MOD_API, "pod", [I32, I32], [I32])
    def pod_json(buf: int, limit: int) -> int:
        data = cached("pod", lambda: json.dumps(ctx().pod.raw, separators=(",", ":")).encode())
        return give(data, buf, limit, "pod")

    @fn(abi.MOD_API, "nodeName", [I32, I32], [I32])
    def node_name(buf: int, limit: int) -> int:
        return give(ctx().node_name.encode(), buf, limit, "nodeName")

    # -- k8s.io/scheduler: config and results.
    @fn(abi.MOD_SCHEDULER, "get_config", [I32, I32], [I32])
    def get_config(buf: int, limit: int) -> int:
        assert inst is not None
        return give(inst.config, buf, limit, "get_config")

    @fn(abi.MOD_SCHEDULER, "cycle", [], [I64])
    def cycle() -> int:
        return ctx().cycle

    @fn(abi.MOD_SCHEDULER, "result.status_reason", [I32, I32], [])
    def status_reason(buf: int, length: int) -> None:
        if length > abi.MAX_REASON_BYTES:
            raise GuestFault(f"result.status_reason: {length} bytes (at most {abi.MAX_REASON_BYTES})")
        ctx().reason = read(buf, length, "result.status_reason").decode(errors="replace")

    @fn(abi.MOD_SCHEDULER, "result.node_names", [I32, I32], [])
    def node_names(buf: int, length: int) -> None:
        raw = read(buf, length, "result.node_names")
        ctx().node_names = [s.decode(errors="replace") for s in raw.split(b"\0") if s]

    @fn(abi.MOD_SCHEDULER, "result.node_codes", [I32, I32], [])
    def node_codes(buf: int, length: int) -> None:
        codes = per_node(read(buf, length, "result.node_codes"), 1, "result.node_codes", "u1")
        bad = ~np.isin(codes, (abi.CODE_SUCCESS, abi.CODE_UNSCHEDULABLE, abi.CODE_UNRESOLVABLE))
        if bad.any():
            raise GuestFault(f"result.node_codes: code {int(codes[bad][0])} is not 0, 2 or 3")
        ctx().node_codes = codes

    @fn(abi.MOD_SCHEDULER, "result.scores", [I32, I32], [])
    def scores(buf: int, length: int) -> None:
        ctx().result_scores = per_node(read(buf, length, "result.scores"), 8, "result.scores", "<i8")

    @fn(abi.MOD_SCHEDULER, "nodeScoreList", [I32, I32], [I32])
    def node_score_list(buf: int, limit: int) -> int:
        s = ctx().scores
        data = b"" if s is None else np.asarray(s, dtype="<i8").tobytes()
        return give(data, buf, limit, "nodeScoreList")

    @fn(abi.MOD_SCHEDULER, "result.normalized_score_list", [I32, I32], [])
    def normalized(buf: int, length: int) -> None:
        raw = read(buf, length, "result.normalized_score_list")
        ctx().result_scores = per_node(raw, 8, "result.normalized_score_list", "<i8")

    # -- k8s.io/klog
    @fn(abi.MOD_KLOG, "log", [I32, I32, I32], [])
    def klog(severity: int, msg: int, length: int) -> None:
        text = read(msg, min(length, abi.MAX_REASON_BYTES), "log").decode(errors="replace")
        who = inst.name if inst is not None else "?"
        log.log(logging.ERROR if severity >= 2 else logging.INFO, "wasm guest %s: %s", who, text)

    # -- harmonic.io/nodes: the candidate nodes as columns, one entry per node in call order.
    @fn(abi.MOD_NODES, "count", [], [I32])
    def count() -> int:
        return len(ctx().slots)

    @fn(abi.MOD_NODES, "names", [I32, I32], [I32])
    def names(buf: int, limit: int) -> int:
        c = ctx()
        data = cached("names", lambda: columns.names(snap_of(c), c.slots))
        return give(data, buf, limit, "names")

    @fn(abi.MOD_NODES, "label", [I32, I32, I32, I32], [I32])
    def label(key: int, key_len: int, buf: int, limit: int) -> int:
        c = ctx()
        k = read(key, key_len, "label key").decode(errors="replace")
        data = cached(("label", k), lambda: columns.label(snap_of(c), k, c.slots))
        return give(data, buf, limit, "label")

    @fn(abi.MOD_NODES, "unschedulable", [I32, I32], [I32])
    def unschedulable(buf: int, limit: int) -> int:
        c = ctx()
        data = cached("unschedulable", lambda: snap_of(c).unschedulable[c.slots].astype(np.uint8).tobytes())
        return give(data, buf, limit, "unschedulable")

    @fn(abi.MOD_NODES, "fields", [I32, I32, I32, I32], [I32])
    def node_fields(spec: int, spec_len: int, buf: int, limit: int) -> int:
        c = ctx()
        names = read(spec, spec_len, "fields").decode(errors="replace")

        def make() -> bytes:
            out = []
            for name in names.split(","):
                if name not in SECTIONS:
                    raise GuestFault(f"fields: no section {name!r} (one of {', '.join(SECTIONS)})")
                out.append(fields.section(snap_of(c), name, c.slots))
            return b"".join(out)

        return give(cached(("fields", names), make), buf, limit, "fields")

    # -- harmonic.io/pod: the pod's fields a guest without a JSON parser needs.
    def pod_string(field_name: str) -> Callable[[int, int], int]:
        def get(buf: int, limit: int) -> int:
            return give(str(getattr(ctx().pod, field_name)).encode(), buf, limit, field_name)

        return get

    for f in ("name", "namespace", "uid"):
        fns[abi.MOD_POD, f] = ([I32, I32], [I32], pod_string(f))

    @fn(abi.MOD_POD, "label", [I32, I32, I32, I32], [I32])
    def pod_label(key: int, key_len: int, buf: int, limit: int) -> int:
        k = read(key, key_len, "label key").decode(errors="replace")
        v = ctx().pod.labels.get(k)
        return -1 if v is None else give(v.encode(), buf, limit, "label")

    @fn(abi.MOD_POD, "tolerations", [I32, I32], [I32])
    def tolerations(buf: int, limit: int) -> int:
        tols = ctx().pod.tolerations
        data = cached(
            "tolerations",
            lambda: abi.string_column([s for t in tols for s in (t.key, t.operator, t.value, t.effect)]),
        )
        return give(data, buf, limit, "tolerations")

    return fns
