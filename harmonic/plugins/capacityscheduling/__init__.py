"""CapacityScheduling (ElasticQuota min/max with borrowing and reclaim), as scheduler-plugins defines it."""

from harmonic.plugins.capacityscheduling.plugin import CapacityScheduling

__all__ = ["CapacityScheduling"]
