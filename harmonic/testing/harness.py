"""A scheduler wired to an in-memory cluster, for tests: ``h = Harness(); h.add_nodes(...); h.schedule()``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.config import load_config
from harmonic.framework.registry import Registry
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import Binder, Scheduler


class Harness:
    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        registry: Registry | None = None,
        seed: int = 0,
        services: Mapping[str, Any] | None = None,
        binder: Binder | None = None,
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
            binder=binder,
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

    def events(self, name: str, namespace: str = "default") -> list[tuple[str, str]]:
        """(reason, message) of the Events recorded for a pod, oldest first."""
        return [
            (e.reason, e.message) for e in self.cluster.events if (e.namespace, e.name) == (namespace, name)
        ]

    def condition(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """The pod's PodScheduled condition."""
        pod = self.cluster.pods.get(f"{namespace}/{name}")
        for c in ((pod or {}).get("status") or {}).get("conditions") or ():
            if c.get("type") == "PodScheduled":
                return dict(c)
        return None

    def placement(self) -> dict[str, str]:
        return self.cluster.placement()

    def failure(self, name: str, namespace: str = "default") -> str | None:
        return self.cluster.last_failure(namespace, name)


class DeferredBinder:
    """A binder that holds binding cycles until ``run`` is called: pods stay assumed meanwhile, as they
    do while a real API server answers (for tests of what happens between scheduling and binding)."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def submit(self, fn: Callable[[], None]) -> None:
        self.pending.append(fn)

    def run(self, count: int | None = None) -> int:
        """Run the oldest ``count`` held binding cycles (all by default); returns how many ran."""
        batch = self.pending[:count] if count is not None else self.pending
        self.pending = self.pending[len(batch) :]
        for fn in batch:
            fn()
        return len(batch)

    def shutdown(self) -> None:
        self.run()
