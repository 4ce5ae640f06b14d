"""NodeResourcesBalancedAllocation args and the standard-deviation formula beyond upstream's table."""

from __future__ import annotations

import numpy as np

from harmonic.plugins.balancedallocation import balanced_scores
from tests.plugins.conftest import config_error


def test_weight_other_than_one_is_rejected_naming_the_field() -> None:
    msg = config_error("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]})
    assert "resources[0].weight" in msg and "must be 1" in msg


def test_duplicate_resource_is_rejected_naming_the_field() -> None:
    msg = config_error(
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "cpu"}]},
    )
    assert "resources[2].name" in msg and "duplicate" in msg


def test_three_resources_use_the_population_standard_deviation() -> None:
    # Fractions 0.5, 0.25, 0.75: mean 0.5, variance (0 + 0.0625 + 0.0625) / 3, std 0.2041 -> 79.
    alloc = np.array([[4, 4, 4]])
    requested = np.array([[2, 1, 3]])
    assert balanced_scores(alloc, requested).tolist() == [79]


def test_fraction_is_capped_at_one_and_unscored_resources_are_left_out() -> None:
    # cpu over capacity counts as 1.0; the resource with no allocatable is skipped: |1 - 0.5| / 2 -> 75.
    alloc = np.array([[2, 0, 10]])
    requested = np.array([[5, 3, 5]])
    assert balanced_scores(alloc, requested).tolist() == [75]
