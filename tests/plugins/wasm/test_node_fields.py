"""harmonic.io/nodes.fields: every section of the whole Node, for the candidates in call order."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.wasm.node_fields import SECTIONS, NodeFields

NODE_A: dict[str, Any] = {
    "metadata": {"name": "a", "labels": {"zone": "z1"}, "annotations": {"note": "hi", "owner": "ops"}},
    "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "4", "memory": "8Gi"},
        "allocatable": {"cpu": "3500m", "memory": "7Gi"},
        "images": [{"names": ["nginx:1", "nginx@sha256:0"], "sizeBytes": 1000}],
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}],
    },
}
NODE_B: dict[str, Any] = {"metadata": {"name": "b"}}


def _list_column(buf: bytes, arity: int) -> tuple[list[list[tuple[str, ...]]], bytes]:
    """Decodes one section; returns each node's entries and the rest of the buffer."""
    (n,) = struct.unpack_from("<I", buf, 0)
    ends = struct.unpack_from(f"<{n}I", buf, 4)
    col = buf[4 + 4 * n :]
    (m,) = struct.unpack_from("<I", col, 0)
    str_ends = struct.unpack_from(f"<{m}I", col, 4)
    present = col[4 + 4 * m : 4 + 5 * m]
    data = col[4 + 5 * m :]
    assert all(present)
    strings = [data[(str_ends[i - 1] if i else 0) : str_ends[i]].decode() for i in range(m)]
    entries = [tuple(strings[e * arity : e * arity + arity]) for e in range(m // arity)]
    out, begin = [], 0
    for end in ends:
        out.append(entries[begin:end])
        begin = end
    return out, data[(str_ends[-1] if m else 0) :]


@pytest.fixture
def snap() -> Snapshot:
    s = Snapshot()
    for raw in (NODE_A, NODE_B):
        s.set_node(parse_node(raw))
    return s


WANT_A = {
    "labels": [("zone", "z1")],
    "annotations": [("note", "hi"), ("owner", "ops")],
    "taints": [("gpu", "yes", "NoSchedule")],
    "allocatable": [("cpu", "3500"), ("memory", str(7 << 30))],
    "capacity": [("cpu", "4000"), ("memory", str(8 << 30))],
    "images": [("nginx:1", "1000"), ("nginx@sha256:0", "1000")],
    "conditions": [("Ready", "True"), ("DiskPressure", "False")],
}


@pytest.mark.parametrize("section", list(WANT_A))
def test_each_section_in_call_order(snap: Snapshot, section: str) -> None:
    arity = SECTIONS[section][0]
    slots = np.array([snap.slot("b"), snap.slot("a"), snap.slot("b")])
    got, rest = _list_column(NodeFields().section(snap, section, slots), arity)
    assert rest == b""
    # Node b has none of these: its entries are empty lists.
    assert got == [[], WANT_A[section], []]


def test_a_changed_node_is_seen(snap: Snapshot) -> None:
    fields = NodeFields()
    fields.section(snap, "taints", snap.order)
    snap.set_node(parse_node({**NODE_B, "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}))
    got, _ = _list_column(fields.section(snap, "taints", np.array([snap.slot("b")])), 3)
    assert got == [[("k", "", "NoExecute")]]
