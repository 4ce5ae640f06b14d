"""InterPodAffinity — PreFilter (+AddPod/RemovePod), Filter, PreScore, Score (+NormalizeScore).

Places pods relative to other pods, as kube-scheduler's plugin of the same name does: the incoming
pod's required pod affinity (some domain of the node's topology key must hold a pod matching all its
terms — unless no pod matches anywhere and the pod matches its own terms, the first pod of a group) and
required anti-affinity (no domain of the node may hold a pod matching a term), and the existing pods'
required anti-affinity toward it, filter nodes; preferred terms of the pod and of existing pods, and
existing pods' required affinity terms (weighted ``hardPodAffinityWeight``), score them, normalised
min-max over the feasible nodes. Terms honour ``namespaces``, ``namespaceSelector`` (namespace labels
from the handle service ``"namespaces"``; without it namespaces have no labels) and
``matchLabelKeys`` / ``mismatchLabelKeys``.

Args (``InterPodAffinityArgs``): ``hardPodAffinityWeight`` (default 1, 0..100) and
``ignorePreferredTermsOfExistingPods`` (default false).

Modules: ``selectors`` (label selectors with upstream's validation), ``terms`` (compiled terms cached in
``Pod.extra``), ``index`` (existing pods' terms per signature and node, a ``SnapshotListener``),
``domains`` (per-topology-domain sums over label codes), ``filtering``, ``scoring``, ``plugin`` (the
class and its queueing hints). Pods matching the incoming pod's terms are counted by the snapshot's
``PodCounts``; no cycle walks the cluster's pods.
"""

from harmonic.plugins.interpodaffinity.args import InterPodAffinityArgs
from harmonic.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from harmonic.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "InterPodAffinity",
    "InterPodAffinityArgs",
]
