"""The rescheduler: descheduler-compatible policies and Harmonic's plans, inside disruption budgets.

Layout (descheduler's, one module per plugin): ``policy`` loads ``descheduler/v1alpha2``
``DeschedulerPolicy`` files; ``evictor`` is DefaultEvictor's filters; ``budget`` the eviction limits and
PodDisruptionBudgets; ``whatif`` runs the scheduler's own plugins on a copy of the cluster; ``plugins/``
holds one module per rescheduler plugin; ``runner`` runs a policy once over a cluster state.
"""
