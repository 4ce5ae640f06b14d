"""scheduler_perf workloads: upstream's benchmark scenarios, run against the in-memory cluster."""
