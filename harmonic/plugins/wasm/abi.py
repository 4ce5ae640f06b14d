"""The guest ABI's names and byte layouts (``docs/wasm.md`` is its specification).

Names follow kube-scheduler-wasm-extension where the concept is the same (guest exports ``filter``,
``score``...; host modules ``k8s.io/api`` and ``k8s.io/scheduler``); what differs is batching: one
call covers every candidate node, which the guest reads as columns (``harmonic.io/nodes``) and answers
with one array (``result.node_codes``, ``result.scores``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Host modules a guest may import from.
MOD_API = "k8s.io/api"
MOD_SCHEDULER = "k8s.io/scheduler"
MOD_KLOG = "k8s.io/klog"
MOD_NODES = "harmonic.io/nodes"
MOD_POD = "harmonic.io/pod"
MOD_WASI = "wasi_snapshot_preview1"

MEMORY_EXPORT = "memory"


@dataclass(frozen=True)
class Export:
    """A guest export the host calls: its wasm signature and the extension point it implements."""

    name: str
    params: tuple[str, ...]
    results: tuple[str, ...]
    point: str


#: Guest exports by name. ``unreserve`` needs ``reserve``; ``normalizescore`` needs ``score``.
EXPORTS: dict[str, Export] = {
    e.name: e
    for e in (
        Export("prefilter", (), ("i32",), "preFilter"),
        Export("filter", (), ("i32",), "filter"),
        Export("prescore", (), ("i32",), "preScore"),
        Export("score", (), ("i32",), "score"),
        Export("normalizescore", (), ("i32",), "score"),
        Export("reserve", (), ("i32",), "reserve"),
        Export("unreserve", (), (), "reserve"),
        Export("permit", (), ("i64",), "permit"),
        Export("prebind", (), ("i32",), "preBind"),
        Export("bind", (), ("i32",), "bind"),
        Export("postbind", (), (), "postBind"),
    )
}

#: kube-scheduler-wasm-extension's exports: called once per node at Filter and Score, with its return
#: conventions (``score``: score in the high 32 bits, status in the low; ``permit``: status in the high
#: 32 bits, timeout in ms in the low; ``postfilter``: nominating mode high, status low).
UPSTREAM_EXPORTS: dict[str, Export] = {
    e.name: e
    for e in (
        # Not an extension point: asked once for the cluster events to register.
        Export("enqueue", (), (), ""),
        Export("prefilter", (), ("i32",), "preFilter"),
        Export("addpod", (), ("i32",), "preFilter"),
        Export("removepod", (), ("i32",), "preFilter"),
        Export("filter", (), ("i32",), "filter"),
        Export("postfilter", (), ("i64",), "postFilter"),
        Export("prescore", (), ("i32",), "preScore"),
        Export("score", (), ("i64",), "score"),
        Export("normalizescore", (), ("i32",), "score"),
        Export("reserve", (), ("i32",), "reserve"),
        Export("unreserve", (), (), "reserve"),
        Export("permit", (), ("i64",), "permit"),
        Export("prebind", (), ("i32",), "preBind"),
        Export("bind", (), ("i32",), "bind"),
        Export("postbind", (), (), "postBind"),
    )
}

HARMONIC = "harmonic"
UPSTREAM = "upstream"

#: Imports only Harmonic's batched ABI has: a guest importing one is a Harmonic guest.
HARMONIC_IMPORTS = frozenset(
    {
        (MOD_API, "pod"),
        (MOD_API, "nodeName"),
        (MOD_SCHEDULER, "cycle"),
        (MOD_SCHEDULER, "result.node_codes"),
        (MOD_SCHEDULER, "result.scores"),
    }
)
#: Modules only Harmonic's batched ABI has.
HARMONIC_MODULES = frozenset({MOD_NODES, MOD_POD})

#: Status codes as the guest returns them (framework.Code's values).
CODE_SUCCESS = 0
CODE_ERROR = 1
CODE_UNSCHEDULABLE = 2
CODE_UNRESOLVABLE = 3
CODE_WAIT = 4
CODE_SKIP = 5

#: The longest status reason a guest may set; a longer one is garbage.
MAX_REASON_BYTES = 4096


def u32(n: int) -> bytes:
    return int(n).to_bytes(4, "little")


class StringTable:
    """Distinct strings flattened once (a label's values, the nodes' names) for column encoding."""

    __slots__ = ("blob", "lens", "starts")

    def __init__(self, values: list[str]) -> None:
        encoded = [v.encode() for v in values]
        self.lens = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        self.starts = np.zeros(len(encoded), dtype=np.int64)
        if len(encoded) > 1:
            np.cumsum(self.lens[:-1], out=self.starts[1:])
        self.blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)

    def column(self, codes: np.ndarray) -> bytes:
        """The string column of ``codes`` (indexes into the table; -1 = absent):
        ``u32 n | u32 end[n] | u8 present[n] | bytes``, value ``i`` being ``bytes[end[i-1]:end[i]]``."""
        n = len(codes)
        present = codes >= 0
        safe = np.where(present, codes, 0)
        lens = np.where(present, self.lens[safe] if len(self.lens) else 0, 0)
        ends = np.cumsum(lens, dtype=np.int64)
        total = int(ends[-1]) if n else 0
        if total:
            begins = ends - lens
            idx = np.repeat(self.starts[safe] - begins, lens) + np.arange(total, dtype=np.int64)
            data = self.blob[idx].tobytes()
        else:
            data = b""
        return u32(n) + ends.astype("<u4").tobytes() + present.astype(np.uint8).tobytes() + data


def string_column(values: list[str]) -> bytes:
    """A string column of a few values (a pod's tolerations), all present."""
    return StringTable(values).column(np.arange(len(values), dtype=np.int64))
