"""Right-sizing beside a live scheduler (``harmonic run --feedback-rightsizing``).

Each feedback round reads the pods' use (the Prometheus of ``--feedback-prometheus`` — cAdvisor's
``container_cpu_usage_seconds_total`` and working set over one minute — or else metrics-server through
the API server), off the scheduler's thread; on the scheduler's side the round's reports and use go to
the ``RightSizingLoop``, which answers with actions; back off the scheduler's thread each action is
carried out through the API server by ``LiveActuator``: ``pods/resize`` for workloads that opted in,
the ``harmonic.dev/recommendation`` annotation otherwise. The kubelet's answer is logged; an
``Infeasible`` resize asks for a move: with ``harmonic run --feedback-moves`` the pod is evicted and its
replacement's node reserved (``feedback.moves_live``), otherwise the ask is logged as a recommendation
(docs/feedback.md, "Live: `harmonic run --feedback-moves`").
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from typing import Any

from harmonic.api.resources import CPU, MEMORY
from harmonic.feedback.resize import INFEASIBLE, LiveActuator
from harmonic.feedback.rightsizing import RightSizer, RightSizingArgs
from harmonic.feedback.rightsizing_loop import Action, RightSizingLoop
from harmonic.signals.usage import UsageReading, UsageSource

log = logging.getLogger(__name__)


class LiveRightSizing:
    def __init__(
        self, usage: UsageSource, actuator: LiveActuator, args: RightSizingArgs, interval: float
    ) -> None:
        self.usage = usage
        self.actuator = actuator
        self.loop = RightSizingLoop(RightSizer(args), interval)
        self.counts: Counter[str] = Counter()
        #: (workload, text) of every action carried out and its answer.
        self.log: deque[tuple[str, str]] = deque(maxlen=1000)

    def read(self) -> UsageReading:
        """The pods' use now (off the scheduler's thread: the source may be slow or down)."""
        return self.usage.read()

    def carry_out(self, actions: list[Action], now: float) -> None:
        """Resize or publish, pod by pod, through the API server (off the scheduler's thread)."""
        for a in actions:
            cpu, mem = float(a.pod.requests.get(CPU, 0)), float(a.pod.requests.get(MEMORY, 0))
            if abs(cpu - a.cpu_millis) <= 1.0 and abs(mem - a.memory_bytes) <= 2**20:
                continue
            out = self.actuator.apply(a.pod.raw, a.cpu_millis, a.memory_bytes)
            self.counts[out.state] += 1
            text = (
                f"t={now:g} {out.pod}: cpu {a.cpu_millis:.0f}m, memory {a.memory_bytes / 2**20:.0f}Mi: {out.state}"
                + (f" ({out.message})" if out.message else "")
                + (f"; restarts {', '.join(out.restarts)}" if out.restarts else "")
            )
            if out.state == INFEASIBLE:
                text += f"; move {out.pod} off {a.pod.node_name} ({getattr(self.actuator, 'move_note', 'recommended')})"
            if out.state == "error":
                log.warning("right-sizing %s: %s", out.pod, out.message)
            self.log.append((str(a.workload), text))

    def decisions(self) -> list[tuple[str, str]]:
        return [(d.workload, d.explain()) for d in self.loop.sizer.log] + list(self.log)

    def state(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "requested": {str(k): v for k, v in self.loop.requested.items()}}
