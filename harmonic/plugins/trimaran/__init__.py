"""scheduler-plugins' Trimaran load-aware plugins: TargetLoadPacking and LoadVariationRiskBalancing."""

from harmonic.plugins.trimaran.loadvariationriskbalancing import LoadVariationRiskBalancing
from harmonic.plugins.trimaran.targetloadpacking import TargetLoadPacking

__all__ = ["LoadVariationRiskBalancing", "TargetLoadPacking"]
