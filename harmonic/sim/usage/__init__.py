"""What pods really use in the simulated world, and how the world reports it.

``config`` (the scenario's ``usage:`` block), ``truth`` (the world side: every running pod's actual CPU
and memory, throttling, kubelet's memory-pressure evictions; plugins never read it), ``alibaba`` (usage
series from Alibaba cluster-trace-v2018 files, and a generator writing files in that schema),
``exporters`` (what node-exporter, cAdvisor and metrics-server would report about it, behind the
Prometheus HTTP API and the ``metrics.k8s.io`` API) and ``metrics`` (the figures in metrics.json).
"""
