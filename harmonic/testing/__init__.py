"""Helpers for tests of Harmonic and of third-party plugins: fluent object builders and harnesses."""

from harmonic.testing.builders import NodeBuilder, PodBuilder, node, pod

__all__ = ["NodeBuilder", "PodBuilder", "node", "pod"]
