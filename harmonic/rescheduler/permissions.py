"""The Kubernetes API access ``harmonic reschedule`` needs: the source of its RBAC rules (the chart's
``templates/rescheduler.yaml`` grants exactly these; tests check both ways)."""

from __future__ import annotations

from harmonic.cluster.permissions import Permission, leader_election_permissions


def rescheduler_permissions(lease_name: str) -> tuple[Permission, ...]:
    return (
        Permission("", ("nodes",), ("list",), "each cycle lists the nodes"),
        Permission(
            "",
            ("pods",),
            ("get", "list"),
            "each cycle lists pods; a plan re-reads the pending pod and its node's pods",
        ),
        Permission(
            "",
            ("pods/eviction",),
            ("create",),
            "evictions go through the Eviction API (PodDisruptionBudgets)",
        ),
        Permission("", ("pods/status",), ("patch",), "a plan nominates the node it makes room on"),
        Permission("", ("namespaces",), ("list",), "DefaultEvictor's namespaceLabelSelector"),
        Permission("policy", ("poddisruptionbudgets",), ("list",), "plans stay inside disruption budgets"),
        Permission("", ("events",), ("create", "patch", "update"), "Descheduled / EvictionFailed events"),
        Permission("events.k8s.io", ("events",), ("create", "patch", "update"), "the same, events.k8s.io/v1"),
        *leader_election_permissions(lease_name),
    )
