"""DefaultBinder — Bind.

Binds the pod through the cluster adapter (the ``pods/binding`` subresource on a live cluster). No args.
"""

from __future__ import annotations

from typing import ClassVar

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import BindPlugin
from harmonic.framework.status import Status


class DefaultBinder(BindPlugin):
    NAME: ClassVar[str] = "DefaultBinder"

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.handle.client.bind(pod, node_name)
