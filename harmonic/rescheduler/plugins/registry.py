"""Rescheduler plugin names, as policies write them, to their classes."""

from __future__ import annotations

from harmonic.rescheduler.framework import ReschedulerPlugin
from harmonic.rescheduler.plugins.consolidate import Consolidate
from harmonic.rescheduler.plugins.highnodeutilization import HighNodeUtilization
from harmonic.rescheduler.plugins.improveharmony import ImproveHarmony
from harmonic.rescheduler.plugins.interpodantiaffinity import RemovePodsViolatingInterPodAntiAffinity
from harmonic.rescheduler.plugins.lownodeutilization import LowNodeUtilization
from harmonic.rescheduler.plugins.makeroom import MakeRoomForPending
from harmonic.rescheduler.plugins.nodeaffinity import RemovePodsViolatingNodeAffinity
from harmonic.rescheduler.plugins.nodetaints import RemovePodsViolatingNodeTaints
from harmonic.rescheduler.plugins.podlifetime import PodLifeTime
from harmonic.rescheduler.plugins.removeduplicates import RemoveDuplicates
from harmonic.rescheduler.plugins.removefailedpods import RemoveFailedPods
from harmonic.rescheduler.plugins.restorezonespread import RestoreZoneSpread
from harmonic.rescheduler.plugins.toomanyrestarts import RemovePodsHavingTooManyRestarts
from harmonic.rescheduler.plugins.topologyspread import RemovePodsViolatingTopologySpreadConstraint

PLUGINS: tuple[type[ReschedulerPlugin], ...] = (
    RemoveDuplicates,
    LowNodeUtilization,
    HighNodeUtilization,
    RemovePodsViolatingInterPodAntiAffinity,
    RemovePodsViolatingNodeAffinity,
    RemovePodsViolatingNodeTaints,
    RemovePodsViolatingTopologySpreadConstraint,
    RemovePodsHavingTooManyRestarts,
    PodLifeTime,
    RemoveFailedPods,
    MakeRoomForPending,
    Consolidate,
    ImproveHarmony,
    RestoreZoneSpread,
)


def rescheduler_registry() -> dict[str, type[ReschedulerPlugin]]:
    return {p.NAME: p for p in PLUGINS}
