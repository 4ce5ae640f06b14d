"""kube-scheduler extender: the extender v1 protocol served by the Harmonic framework."""
