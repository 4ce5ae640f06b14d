"""Small builders for the objects upstream's Go tests construct, in manifest (JSON) form.

Used only by the translation scripts in this folder, which write ``tests/conformance/translated/``.
Conventions (also in the translated README): a pod always gets one container (``pause``) because a
manifest needs one; an unnamed upstream node is called ``test-node``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
OUT = Path(__file__).parents[1] / "translated"
SUCCESS: Obj = {"code": "Success", "reasons": []}


def status(code: str, *reasons: str) -> Obj:
    return {"code": code, "reasons": list(reasons)}


def unresolvable(*reasons: str) -> Obj:
    return status("UnschedulableAndUnresolvable", *reasons)


def unschedulable(*reasons: str) -> Obj:
    return status("Unschedulable", *reasons)


def node(
    name: str = "test-node",
    labels: dict[str, str] | None = None,
    allocatable: dict[str, Any] | None = None,
    images: list[tuple[list[str], int]] | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool = False,
) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    st: Obj = {}
    if allocatable is not None:
        st["allocatable"] = {k: str(v) for k, v in allocatable.items()}
    if images:
        st["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": st}


def container(
    name: str = "c",
    image: str = "pause",
    requests: dict[str, Any] | None = None,
    ports: list[Obj] | None = None,
) -> Obj:
    c: Obj = {"name": name, "image": image}
    if requests is not None:
        c["resources"] = {"requests": {k: str(v) for k, v in requests.items()}}
    if ports:
        c["ports"] = ports
    return c


def pod(
    name: str = "pod",
    namespace: str = "default",
    containers: list[Obj] | None = None,
    init_containers: list[Obj] | None = None,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    s: Obj = {"containers": containers or [container()]}
    if init_containers:
        s["initContainers"] = init_containers
    if node_name:
        s["nodeName"] = node_name
    s.update({k: v for k, v in spec.items() if v is not None})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def req(key: str, op: str, values: list[str] | None = None) -> Obj:
    r: Obj = {"key": key, "operator": op}
    if values is not None:
        r["values"] = values
    return r


def term(expressions: list[Obj] | None = None, fields: list[Obj] | None = None) -> Obj:
    t: Obj = {}
    if expressions is not None:
        t["matchExpressions"] = expressions
    if fields is not None:
        t["matchFields"] = fields
    return t


def write(file: str, source: str, cases: list[Obj], skipped: list[Obj]) -> None:
    """Write ``translated/<file>.json``; the plugin is ``file`` up to its first dot."""
    names = [c["name"] for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"{file}: duplicate case names {sorted(dup)}")
    doc = {"plugin": file.split(".")[0], "source": source, "cases": cases, "skipped": skipped}
    OUT.mkdir(exist_ok=True)
    (OUT / f"{file}.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{file}: {len(cases)} cases, {len(skipped)} skipped")


def res_node(name: str, milli_cpu: int, memory: int, extended: dict[str, int] | None = None) -> Obj:
    """noderesources' makeNode: allocatable = capacity = cpu, memory, 100 pods and extended resources."""
    alloc: dict[str, Any] = {"pods": 100, "cpu": f"{milli_cpu}m", "memory": memory}
    alloc.update(extended or {})
    return node(name, allocatable=alloc)
