"""The in-tree registry: every plugin Harmonic ships, by the name users write in configs."""

from __future__ import annotations

from functools import cache

from harmonic.framework.registry import Registry, entry_point_plugins
from harmonic.plugins.balancedallocation import NodeResourcesBalancedAllocation
from harmonic.plugins.capacityscheduling import CapacityScheduling
from harmonic.plugins.communicationaffinity import CommunicationAffinity
from harmonic.plugins.coscheduling import Coscheduling
from harmonic.plugins.defaultbinder import DefaultBinder
from harmonic.plugins.defaultpreemption import DefaultPreemption
from harmonic.plugins.dissonance import Dissonance
from harmonic.plugins.imagelocality import ImageLocality
from harmonic.plugins.interpodaffinity import InterPodAffinity
from harmonic.plugins.loadaware import LoadAware
from harmonic.plugins.nodeaffinity import NodeAffinity
from harmonic.plugins.nodebandwidth import NodeBandwidth
from harmonic.plugins.nodename import NodeName
from harmonic.plugins.nodeports import NodePorts
from harmonic.plugins.noderesourcesfit import NodeResourcesFit
from harmonic.plugins.nodeunschedulable import NodeUnschedulable
from harmonic.plugins.nodevolumelimits import NodeVolumeLimits
from harmonic.plugins.podtopologyspread import PodTopologySpread
from harmonic.plugins.prioritysort import PrioritySort
from harmonic.plugins.schedulinggates import SchedulingGates
from harmonic.plugins.spreadingpreemption import SpreadingPreemption
from harmonic.plugins.tainttoleration import TaintToleration
from harmonic.plugins.trimaran import LoadVariationRiskBalancing, TargetLoadPacking
from harmonic.plugins.volumebinding import VolumeBinding
from harmonic.plugins.volumerestrictions import VolumeRestrictions
from harmonic.plugins.volumezone import VolumeZone
from harmonic.plugins.wasm import TEMPLATE as WASM_TEMPLATE

IN_TREE = (
    CapacityScheduling,
    CommunicationAffinity,
    Coscheduling,
    DefaultBinder,
    Dissonance,
    DefaultPreemption,
    ImageLocality,
    InterPodAffinity,
    LoadAware,
    LoadVariationRiskBalancing,
    NodeAffinity,
    NodeBandwidth,
    NodeName,
    NodePorts,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    NodeUnschedulable,
    NodeVolumeLimits,
    PodTopologySpread,
    PrioritySort,
    SchedulingGates,
    SpreadingPreemption,
    TaintToleration,
    TargetLoadPacking,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
)


#: Plugins made from their config: WebAssembly guests (a pluginConfig entry with ``guestURL``).
TEMPLATES = (WASM_TEMPLATE,)


def in_tree_registry() -> Registry:
    return Registry(IN_TREE, TEMPLATES)


@cache
def default_registry() -> Registry:
    """In-tree plugins plus those installed as ``harmonic.plugins`` entry points."""
    return in_tree_registry().merged(entry_point_plugins())
