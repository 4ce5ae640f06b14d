"""The scenario's ``limits`` enforced while its plan is built: nodes, pods and metric samples are
counted from the scenario's numbers before anything is generated, so an oversized scenario fails at
load time with the count (and the limit to raise) instead of running for minutes out of memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harmonic.sim.errors import ScenarioError
from harmonic.sim.scenario import Limits


def object_pods(kind: str, spec: Mapping[str, Any]) -> int:
    """Pods one checked workload object can have at once (a DaemonSet's are counted per node apart)."""
    if kind == "Pod":
        return 1
    if kind == "DaemonSet":
        return 0
    if kind == "Job":
        parallelism = spec.get("parallelism")
        parallelism = 1 if parallelism is None else int(parallelism)
        completions = spec.get("completions")
        return parallelism if completions is None else min(parallelism, int(completions))
    replicas = spec.get("replicas")
    return 1 if replicas is None else int(replicas)  # null is defaulted to 1 like an absent field


class Budget:
    """Running totals against ``limits``; ``source`` is the scenario file errors name."""

    def __init__(self, limits: Limits, source: str) -> None:
        self.limits = limits
        self.source = source
        self.nodes = 0
        #: workload key -> its largest pod count so far (objects deleted and re-created add up).
        self._pods: dict[str, int] = {}
        self._retired = 0
        self._daemonsets = 0

    def _fail(self, path: str, what: str, count: int, limit: int, field: str) -> ScenarioError:
        return ScenarioError(
            self.source,
            path,
            f"{what} {count} {'node' if field == 'maxNodes' else 'pod'}s, more than limits.{field} "
            f"({limit}); raise limits.{field} in the scenario to simulate it anyway",
        )

    def add_nodes(self, count: int, path: str) -> None:
        """Count ``count`` more nodes before they are generated."""
        self.nodes += count
        if self.nodes > self.limits.max_nodes:
            raise self._fail(path, "the scenario would have", self.nodes, self.limits.max_nodes, "maxNodes")

    def expect_pods(self, count: float, path: str) -> None:
        """Refuse to generate ``count`` more objects of at least one pod each (arrivals)."""
        total = self.pods + count
        if total > self.limits.max_pods:
            raise self._fail(
                path, "the scenario would ask for about", round(total), self.limits.max_pods, "maxPods"
            )

    def created(self, key: str, kind: str, spec: Mapping[str, Any]) -> None:
        if kind == "DaemonSet":
            self._daemonsets += 1
        self._retired += self._pods.pop(key, 0)
        self._pods[key] = object_pods(kind, spec)

    def scaled(self, key: str, replicas: int) -> None:
        self._pods[key] = max(self._pods.get(key, 0), replicas)

    @property
    def pods(self) -> int:
        return self._retired + sum(self._pods.values()) + self._daemonsets * self.nodes

    def check_pods(self, path: str) -> None:
        if self.pods > self.limits.max_pods:
            raise self._fail(path, "the workloads ask for", self.pods, self.limits.max_pods, "maxPods")

    def check_samples(self, until: float, sample_interval: float, path: str) -> None:
        samples = until / sample_interval
        if samples > self.limits.max_samples:
            raise ScenarioError(
                self.source,
                path,
                f"the run lasts at least {until:g}s: {samples:.0f} samples of sampleInterval, more than "
                f"limits.maxSamples ({self.limits.max_samples}); raise sampleInterval or the limit",
            )
