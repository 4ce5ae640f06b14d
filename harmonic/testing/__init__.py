"""Helpers for tests of Harmonic and of third-party plugins: fluent object builders and harnesses."""

from harmonic.testing.builders import (
    ElasticQuotaBuilder,
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    elastic_quota,
    node,
    pod,
    pod_group,
)

__all__ = [
    "ElasticQuotaBuilder",
    "NodeBuilder",
    "PodBuilder",
    "PodGroupBuilder",
    "elastic_quota",
    "node",
    "pod",
    "pod_group",
]
