"""The scheduler: queue, cache, scheduling cycle and binding cycle (kube-scheduler's pkg/scheduler)."""
