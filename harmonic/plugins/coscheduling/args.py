"""CoschedulingArgs with scheduler-plugins' defaults (apis/config/v1/defaults.go) and validation."""

from __future__ import annotations

from pydantic import field_validator

from harmonic.framework.args import PluginArgs


class CoschedulingArgs(PluginArgs):
    #: How long a gang's assumed pods wait at Permit for the rest (defaults.go: 60).
    permit_waiting_time_seconds: int = 60
    #: How long a rejected gang stays out of PreFilter; 0 disables the group backoff (default 0).
    pod_group_backoff_seconds: int = 0
    #: PostFilter leaves the gang alone while at most this percentage of minMember is unassigned (10).
    pod_group_reject_percentage: int = 10
    #: Harmonic's gang guard (docs/batch.md): one gang assembles at a time, and the oldest gang that
    #: failed for room has capacity kept for it. ``false`` gives scheduler-plugins' semantics exactly.
    gang_guard: bool = True

    @field_validator("permit_waiting_time_seconds", "pod_group_backoff_seconds")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"Invalid value: {v}: must be greater than 0")
        return v

    @field_validator("pod_group_reject_percentage")
    @classmethod
    def _percentage(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError(f"Invalid value: {v}: must be between 0 and 100")
        return v
