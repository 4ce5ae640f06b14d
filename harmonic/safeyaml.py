"""The one YAML (and JSON) reader for every file Harmonic is given: configs, scenarios, topologies,
policies, kubeconfigs, manifests.

PyYAML's ``safe_load`` builds no objects, but it is not safe against input that is merely large:

- aliases: an alias bomb (``a: &a [x, x]``, ``b: &b [*a, *a]``, ...) is cheap to parse because PyYAML
  shares the aliased objects, but every reader that walks the result (validation, copying, dumping)
  pays for the expanded tree, 2^depth nodes; go-yaml, which Kubernetes' decoders use, refuses a
  document with "excessive aliasing". Here the expanded size of each document is counted (each
  shared node once per reference, memoised) and refused past ``MAX_EXPANDED_NODES``;
- depth: PyYAML's composer recurses per level, so a document nested a few thousand levels deep ends
  in a ``RecursionError`` traceback; go-yaml caps depth too. Refused past ``MAX_DEPTH``;
- size: files past ``MAX_BYTES`` are refused before parsing;
- duplicate keys: PyYAML keeps the last value silently; sigs.k8s.io/yaml's strict decoding (what
  kube-scheduler reads its configuration with) refuses them, naming the key and line. So do we.

Errors are ``yaml.YAMLError`` subclasses, so every reader's existing ``except yaml.YAMLError`` (and
``problem``, which words them on one line) applies unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

#: Nesting deeper than any Kubernetes object or Harmonic file (Pods nest about 15 levels).
MAX_DEPTH = 100
#: Nodes a document may expand to once aliases are followed (go-yaml's own budget is 400,000 decodes
#: before it applies its aliasing ratio; the largest bundled file expands to a few thousand).
MAX_EXPANDED_NODES = 1_000_000
#: Bytes a file may hold (the largest bundled file is tens of kB).
MAX_BYTES = 32 << 20


class UnsafeYAMLError(yaml.YAMLError):
    """A document refused for its shape (aliasing, depth, size), not its syntax."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and documents nested deeper than ``MAX_DEPTH``."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise UnsafeYAMLError(
                f"nested deeper than {MAX_DEPTH} levels (line {mark.line + 1}, column {mark.column + 1})"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # unhashable: the base class reports it
            if duplicate:
                raise ConstructorError(
                    None, None, f"key {json.dumps(str(key))} already set in map", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _expanded_size(root: Node) -> int:
    """Nodes in ``root`` with every alias followed (a shared node counts once per reference)."""
    sizes: dict[int, int] = {}

    def size(node: Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        elif not isinstance(node, ScalarNode):
            raise UnsafeYAMLError(f"unexpected node {type(node).__name__}")
        sizes[id(node)] = total
        return total

    return size(root)


def _documents(text: str) -> Iterator[Any]:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise UnsafeYAMLError(f"larger than {MAX_BYTES >> 20} MiB")
    loader = _StrictLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if _expanded_size(node) > MAX_EXPANDED_NODES:
                raise UnsafeYAMLError(
                    f"document contains excessive aliasing (expands to more than {MAX_EXPANDED_NODES:,} nodes)"
                )
            yield loader.construct_document(node)
    finally:
        loader.dispose()


def load(text: str) -> Any:
    """The one document in ``text`` (None when empty), as ``yaml.safe_load``, strictly."""
    docs = list(_documents(text))
    if len(docs) > 1:
        raise UnsafeYAMLError("expected a single document in the stream, found more")
    return docs[0] if docs else None


def load_all(text: str) -> list[Any]:
    """Every document in ``text``, as ``yaml.safe_load_all``, strictly."""
    return list(_documents(text))


def load_json(text: str) -> Any:
    """A JSON document with the same limits: duplicate keys refused, depth bounded."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise UnsafeYAMLError(f"larger than {MAX_BYTES >> 20} MiB")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise UnsafeYAMLError(f"key {json.dumps(k)} already set in map")
            out[k] = v
        return out

    try:
        doc = json.loads(text, object_pairs_hook=pairs)
    except RecursionError:
        raise UnsafeYAMLError(f"nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(doc)
    return doc


def _check_depth(doc: Any) -> None:
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnsafeYAMLError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def problem(e: yaml.YAMLError) -> str:
    """A YAML error on one line: what is wrong and where."""
    if isinstance(e, yaml.MarkedYAMLError):
        where = e.problem_mark or e.context_mark
        what = e.problem or e.context or "syntax error"
        if where is not None:
            return f"{what} (line {where.line + 1}, column {where.column + 1})"
        return what
    return " ".join(str(e).split())
