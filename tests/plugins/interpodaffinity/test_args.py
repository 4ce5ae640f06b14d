"""InterPodAffinityArgs: defaults and validation, as upstream's ValidateInterPodAffinityArgs."""

from __future__ import annotations

import pytest

from harmonic.framework.config import load_config
from harmonic.plugins.interpodaffinity import InterPodAffinityArgs
from harmonic.plugins.registry import default_registry
from tests.plugins.conftest import config_error, plugin_config


def test_default_profile_enables_plugin_with_weight_two() -> None:
    prof = load_config(None, default_registry()).profiles[0]
    for point in ("preFilter", "filter", "preScore", "score"):
        assert "InterPodAffinity" in prof.plugins_at(point)
    assert prof.weights["InterPodAffinity"] == 2
    args = prof.args["InterPodAffinity"]
    assert args == InterPodAffinityArgs(
        hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False
    )


def test_args_are_read_with_their_v1_names() -> None:
    cfg = load_config(
        plugin_config(
            "InterPodAffinity", {"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}
        ),
        default_registry(),
    )
    args = cfg.profiles[0].args["InterPodAffinity"]
    assert args.hard_pod_affinity_weight == 100
    assert args.ignore_preferred_terms_of_existing_pods is True


@pytest.mark.parametrize("weight", [-1, 101])
def test_hard_pod_affinity_weight_out_of_range(weight: int) -> None:
    msg = config_error("InterPodAffinity", {"hardPodAffinityWeight": weight})
    assert f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0-100]" in msg


def test_unknown_field_is_an_error() -> None:
    assert "hardPodAffinityWeightt" in config_error("InterPodAffinity", {"hardPodAffinityWeightt": 1})
