#!/usr/bin/env python3
"""Extract the protobuf field numbers of Kubernetes' API types from kube-scheduler-wasm-extension's
generated Go code, into ``harmonic/data/wasm/k8s_proto.json`` (read by ``harmonic/plugins/wasm/proto.py``).

Upstream's guests decode the pod and nodes with the ``k8s.io/api`` protobuf messages that
``kubernetes/proto/*/generated.pb.go`` define; each struct field there carries its wire facts in a tag
(``protobuf:"bytes,1,opt,name=metadata" json:"metadata,omitempty"``). This script reads those tags
and writes, for each message, ``json name -> [field number, kind, message or map value]``, so the
encoder can turn a Kubernetes object's JSON into the bytes those guests expect without a protoc
toolchain. Run it against a checkout of upstream when its API version moves:

    python scripts/gen_k8s_proto_schema.py UPSTREAM_CHECKOUT/kubernetes/proto
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "harmonic" / "data" / "wasm" / "k8s_proto.json"
PACKAGES = ("api", "meta", "resource", "runtime", "instr")

_STRUCT = re.compile(r"^type (\w+) struct \{$(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s+\w+\s+(\S+)\s+`protobuf:\"(\w+),(\d+),(\w+)[^\"]*\" json:\"(\w+)")
_SCALARS = {
    "string": "string",
    "bool": "bool",
    "int32": "varint",
    "int64": "varint",
    "uint32": "varint",
    "uint64": "varint",
    "float64": "double",
}


def _kind(go_type: str, pkg: str) -> tuple[str, str | None]:
    """The encoder's kind of a Go field type, and the message it refers to (``pkg.Name``)."""
    t = go_type.lstrip("*")
    if t.startswith("[]") and t != "[]byte":
        t = t[2:].lstrip("*")
    if t == "[]byte":
        return "bytes", None
    if t in _SCALARS:
        return _SCALARS[t], None
    return "message", t if "." in t else f"{pkg}.{t}"


def parse(root: Path) -> dict[str, dict[str, list[object]]]:
    schema: dict[str, dict[str, list[object]]] = {}
    for pkg in PACKAGES:
        src = (root / pkg / "generated.pb.go").read_text()
        for name, body in _STRUCT.findall(src):
            fields: dict[str, list[object]] = {}
            for line in body.splitlines():
                m = _FIELD.match(line)
                if m is None:
                    continue
                go_type, _wire, num, _card, json_name = m.groups()
                if go_type.startswith("map["):
                    value = go_type[go_type.index("]") + 1 :]
                    kind, ref = _kind(value, pkg)
                    fields[json_name] = [int(num), "map", [kind, ref]]
                else:
                    kind, ref = _kind(go_type, pkg)
                    fields[json_name] = [int(num), kind, ref] if ref else [int(num), kind]
            if fields:
                schema[f"{pkg}.{name}"] = fields
    return schema


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("proto_root", type=Path, help="upstream's kubernetes/proto folder")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    schema = parse(args.proto_root)
    args.out.write_text(json.dumps(schema, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{args.out}: {len(schema)} messages")


if __name__ == "__main__":
    main()
