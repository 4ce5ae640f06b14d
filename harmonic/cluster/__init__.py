"""Cluster adapters: what feeds events into a ``Scheduler`` and carries its decisions out.

- ``memory``: ``InMemoryCluster`` (tests, benchmarks, simulator).
- ``kube``: the live cluster (``harmonic run``): ``KubeClient`` and ``LiveScheduler``, built from
  ``transport`` (HTTP to the API server), ``informer`` (list+watch caches), ``binding`` (pods/binding),
  ``leader`` (Lease election and fencing), ``events`` (Event recorder), ``services`` (the ``"pdbs"``
  and ``"namespaces"`` handle services), ``health`` (/metrics, /healthz, /readyz) and
  ``permissions`` (the RBAC it needs).

The extender (``harmonic/extender/live.py``) reuses ``transport``, ``informer``, ``binding`` and
``services`` to keep its cache and bind.
"""
