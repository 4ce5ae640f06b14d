"""ImproveHarmony — balance (Harmonic). Moves a pod when the harmony plugins of the scheduler profile
(CommunicationAffinity and Dissonance, whichever it runs, with their profile weights) score the node
the scheduler would now choose for its replacement at least ``minGain`` points above its current node
(evaluated without the pod). The move is exactly the scheduler's choice, so every filter holds (zone
spreading, affinity, resources...) and the models are read only through the framework's Score
plugins — never the simulator's ground truth. Best gains first, at most ``maxMovesPerRun``.

Args (all defaulted): ``minGain`` (20, weighted score points), ``maxMovesPerRun`` (5),
``namespaces``, ``labelSelector``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.budget import EvictionLimitError
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import filtered
from harmonic.rescheduler.whatif import replacement

HARMONY_PLUGINS = ("CommunicationAffinity", "Dissonance")


class ImproveHarmonyArgs(FilteredArgs):
    min_gain: float = Field(default=20.0, ge=0)
    max_moves_per_run: int = Field(default=5, ge=1)


class ImproveHarmony(BalancePlugin):
    NAME: ClassVar[str] = "ImproveHarmony"
    Args = ImproveHarmonyArgs
    args: ImproveHarmonyArgs

    def gain(self, p: Pod, node: str) -> tuple[str, float] | None:
        """(where the scheduler puts the replacement, harmony gain there over ``node``), or None."""
        w = self.handle.whatif
        mark = w.checkpoint()
        w.remove(p)
        try:
            repl = replacement(p)
            ok, state = w.feasible(repl)
            names = w.snapshot.names()
            at = [i for i, s in enumerate(ok.tolist()) if names[s] == node]
            if len(ok) < 2 or not at:
                return None
            fw, snap = w.framework, w.snapshot
            if fw.run_pre_score(state, repl, snap, ok) is not None:
                return None
            total, per_plugin, st = fw.run_score(state, repl, snap, ok)
            if st is not None:
                return None
            harmony = sum(
                (per_plugin[n] for n in HARMONY_PLUGINS if n in per_plugin), np.zeros(len(ok), dtype=np.int64)
            )
            best = int(np.argmax(total))
            if names[ok[best]] == node:
                return None
            return str(names[ok[best]]), float(harmony[best] - harmony[at[0]])
        finally:
            w.undo(mark)

    def balance(self, nodes: list[Node]) -> None:
        h, a = self.handle, self.args
        if not any(n in h.whatif.framework.plugins for n in HARMONY_PLUGINS):
            h.log.plans.append(
                (
                    self.NAME,
                    "skipped",
                    "the scheduler profile runs neither CommunicationAffinity nor Dissonance",
                )
            )
            return
        keep = filtered(h, a)
        candidates: list[tuple[float, Pod]] = []
        for n in nodes:
            for p in h.pods_on(n.name):
                if not keep(p):
                    continue
                g = self.gain(p, n.name)
                if g is not None and g[1] >= a.min_gain:
                    candidates.append((g[1], p))
        candidates.sort(key=lambda c: (-c[0], c[1].key))
        moved = 0
        for _, p in candidates:
            if moved >= a.max_moves_per_run:
                return
            again = self.gain(p, p.node_name)  # earlier moves may have changed the picture
            if again is None or again[1] < a.min_gain:
                continue
            try:
                if h.evictor.evict(p, self.NAME, f"harmony gain {again[1]:g} on {again[0]}", move=True):
                    moved += 1
            except EvictionLimitError as e:
                if e.scope == "total":
                    return
