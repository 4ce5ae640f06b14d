"""A scheduler wired to an in-memory cluster, for tests: ``h = Harness(); h.add_nodes(...); h.schedule()``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.config import load_config
from harmonic.framework.registry import Registry
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import Scheduler


class Harness:
    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        registry: Registry | None = None,
        seed: int = 0,
        services: Mapping[str, Any] | None = None,
    ) -> None:
        if registry is None:
            from harmonic.plugins.registry import default_registry

            registry = default_registry()
        self.registry = registry
        self.config = load_config(config, registry, source="<test>")
        self.clock = ManualClock()
        self.cluster = InMemoryCluster(self.clock.now)
        self.scheduler = Scheduler(
            self.config,
            registry,
            self.cluster,
            clock=self.clock,
            seed=seed,
            services={**self.cluster.scheduler_services(), **(services or {})},
        )
        self.cluster.connect(self.scheduler)

    def add_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        for n in nodes:
            self.cluster.add_node(n)

    def add_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        for p in pods:
            self.cluster.create_pod(p)

    def schedule(self) -> int:
        """Schedule until the active queue is empty; returns the number of attempts."""
        return self.scheduler.run_until_idle()

    def settle(self, seconds: float = 400.0, step: float = 1.0) -> None:
        """Advance virtual time (backoffs, unschedulable flushes) scheduling as pods come due."""
        t = 0.0
        while t < seconds:
            self.schedule()
            self.clock.advance(step)
            t += step
        self.schedule()

    def placement(self) -> dict[str, str]:
        return self.cluster.placement()

    def failure(self, name: str, namespace: str = "default") -> str | None:
        return self.cluster.last_failure(namespace, name)
