"""PodTopologySpread — PreFilter (+AddPod/RemovePod), Filter, PreScore, Score (+NormalizeScore).

Spreads pods matching a selector evenly over topology domains (zones, nodes, ...), as kube-scheduler's
plugin of the same name does: ``whenUnsatisfiable: DoNotSchedule`` constraints filter nodes whose
domain would exceed ``maxSkew`` above the global minimum (``minDomains`` taken into account);
``ScheduleAnyway`` constraints score nodes with fewer matching pods higher. ``nodeAffinityPolicy`` and
``nodeTaintsPolicy`` decide which nodes' domains count; ``matchLabelKeys`` narrows the selector to the
pod's own values of those keys.

Args (``PodTopologySpreadArgs``): ``defaultingType`` (``System``, the default, or ``List``) and
``defaultConstraints`` — constraints for pods that declare none, whose selector is deduced from the
Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod. Those objects come
from the handle service ``"workloads"`` (``harmonic.api.workloads.Workloads``); without that service,
pods without constraints get none.

Modules: ``args`` (args and validation), ``constraints`` (compiling constraints, defaults, node
inclusion), ``filtering`` (PreFilter/Filter/AddPod/RemovePod), ``scoring`` (PreScore/Score/Normalize),
``plugin`` (the class and its queueing hints). Matching pods per node come from the snapshot-maintained
``harmonic.framework.podcounts.PodCounts``, so no cycle rescans pods.
"""

from harmonic.plugins.podtopologyspread.args import PodTopologySpreadArgs
from harmonic.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from harmonic.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]
