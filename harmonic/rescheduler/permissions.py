"""The Kubernetes API access ``harmonic reschedule`` needs: the source of its RBAC rules (the chart's
``templates/rescheduler.yaml`` grants exactly these; tests check both ways)."""

from __future__ import annotations

from harmonic.cluster.permissions import Permission, leader_election_permissions


def rescheduler_permissions(lease_name: str) -> tuple[Permission, ...]:
    return (
        Permission("", ("nodes",), ("list", "watch"), "the cluster cache (informers) of nodes"),
        Permission(
            "",
            ("pods",),
            ("get", "list", "watch"),
            "the cluster cache of pods; a plan re-reads the pending pod and its node's pods",
        ),
        Permission(
            "",
            ("pods/eviction",),
            ("create",),
            "evictions go through the Eviction API (PodDisruptionBudgets)",
        ),
        Permission("", ("pods/status",), ("patch",), "a plan nominates the node it makes room on"),
        Permission("", ("namespaces",), ("list", "watch"), "DefaultEvictor's namespaceLabelSelector"),
        Permission(
            "policy", ("poddisruptionbudgets",), ("list", "watch"), "plans stay inside disruption budgets"
        ),
        Permission(
            "",
            ("persistentvolumes", "persistentvolumeclaims"),
            ("list", "watch"),
            "the what-if's volume plugins: a pod's claims and their volumes",
        ),
        Permission(
            "storage.k8s.io",
            ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"),
            ("list", "watch"),
            "the what-if's volume plugins: classes, capacity, attach limits",
        ),
        Permission(
            "metrics.k8s.io",
            ("nodes", "pods"),
            ("get", "list"),
            "LowNodeUtilization's metricsUtilization (metricsProviders: KubernetesMetrics)",
        ),
        Permission("", ("events",), ("create", "patch", "update"), "Descheduled / EvictionFailed events"),
        Permission("events.k8s.io", ("events",), ("create", "patch", "update"), "the same, events.k8s.io/v1"),
        *leader_election_permissions(lease_name),
    )
