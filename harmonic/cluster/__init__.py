"""Cluster adapters: what feeds events into a ``Scheduler`` and carries its decisions out."""
