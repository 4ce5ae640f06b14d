"""InterPodAffinityArgs: ``hardPodAffinityWeight`` (default 1, 0..100) and
``ignorePreferredTermsOfExistingPods`` (default false), validated as upstream's
``ValidateInterPodAffinityArgs``."""

from __future__ import annotations

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from harmonic.framework.args import PluginArgs

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


class InterPodAffinityArgs(PluginArgs):
    #: Score weight of an existing pod's required affinity term that the incoming pod matches.
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    #: Skip scoring when the incoming pod has no preferred terms of its own.
    ignore_preferred_terms_of_existing_pods: bool = False

    @model_validator(mode="after")
    def _validate(self) -> InterPodAffinityArgs:
        w = self.hard_pod_affinity_weight
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= w <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise PydanticCustomError(
                "inter_pod_affinity_args",
                "hardPodAffinityWeight: Invalid value: {w}: not in valid range [{lo}-{hi}]",
                {"w": w, "lo": MIN_HARD_POD_AFFINITY_WEIGHT, "hi": MAX_HARD_POD_AFFINITY_WEIGHT},
            )
        return self
