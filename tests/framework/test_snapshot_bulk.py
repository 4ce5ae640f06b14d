"""Snapshot.add_pods_at / remove_pods_at account exactly as add_pod / remove_pod do."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.snapshot import Snapshot
from harmonic.testing import node, pod


def fresh():
    snap = Snapshot()
    for i in range(3):
        snap.set_node(parse_node(node(f"n{i}").cap(cpu="8", **{"example.com/gpu": "4"}).obj()))
    return snap


def state(snap):
    return (
        snap.requested.copy(),
        snap.nonzero.copy(),
        [sorted(map(repr, h)) for h in snap.host_ports],
        [sorted(d) for d in snap.pods],
    )


pods = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["", "100m", "1"]),
        st.sampled_from([None, 80, 443]),
        st.booleans(),
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(pods)
def test_bulk_and_single_accounting_agree(spec):
    made = []
    for i, (n, cpu, port, gpu) in enumerate(spec):
        b = pod(f"p{i}")
        if cpu:
            b = b.req(cpu=cpu)
        if gpu:
            b = b.req(**{"example.com/gpu": "1"})
        if port:
            b = b.host_port(port)
        made.append((n, parse_pod(b.obj())))
    one, many = fresh(), fresh()
    for n, p in made:
        one.add_pod(p, f"n{n}")
    many.add_pods_at([(many.slot(f"n{n}"), p) for n, p in made])
    a, b = state(one), state(many)
    assert all(np.array_equal(x, y) for x, y in zip(a[:2], b[:2], strict=True)) and a[2:] == b[2:]
    half = made[: len(made) // 2]
    for n, p in half:
        one.remove_pod(p, f"n{n}")
    many.remove_pods_at([(many.slot(f"n{n}"), p) for n, p in half])
    a, b = state(one), state(many)
    assert all(np.array_equal(x, y) for x, y in zip(a[:2], b[:2], strict=True)) and a[2:] == b[2:]
