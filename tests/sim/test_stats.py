"""Student-t intervals for seed sweeps, against published t tables and hand-computed examples."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harmonic.sim.stats import interval, mean_ci, t975

# t_{0.975, df} from a printed table (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
PUBLISHED = {
    1: 12.706,
    2: 4.303,
    5: 2.571,
    9: 2.262,
    10: 2.228,
    20: 2.086,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    100: 1.984,
    120: 1.980,
}


@pytest.mark.parametrize(("df", "expected"), sorted(PUBLISHED.items()))
def test_t_quantile_matches_the_published_table(df, expected):
    assert t975(df) == pytest.approx(expected, abs=6e-4)


def test_t_quantile_tends_to_the_normal_limit_and_decreases():
    assert t975(100_000) == pytest.approx(1.959964, abs=1e-4)
    values = [t975(df) for df in range(1, 400)]
    assert all(a > b for a, b in itertools.pairwise(values))


def test_t_quantile_rejects_zero_degrees_of_freedom():
    with pytest.raises(ValueError, match="degrees of freedom"):
        t975(0)


def test_interval_of_one_to_five_by_hand():
    # mean 3, sample variance 10/4, half-width t(4) * sqrt(2.5) / sqrt(5) = 2.776445 * 0.707107
    iv = interval([1, 2, 3, 4, 5])
    assert (iv.n, iv.mean) == (5, 3)
    assert iv.stdev == pytest.approx(math.sqrt(2.5))
    assert iv.half_width == pytest.approx(1.963243, abs=1e-6)
    assert iv.low == pytest.approx(3 - 1.963243, abs=1e-6)


def test_a_single_value_has_no_spread():
    iv = interval([4.0])
    assert (iv.n, iv.mean, iv.stdev, iv.half_width, iv.low, iv.high) == (1, 4.0, None, None, None, None)
    assert iv.as_dict()["ci95_half_width"] is None


def test_constant_values_give_a_zero_width_interval():
    iv = interval([0.25] * 7)
    assert iv.stdev == 0 and iv.half_width == 0 and iv.low == iv.high == 0.25


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=40))
def test_interval_contains_the_mean_and_is_shift_invariant(xs):
    iv = interval(xs)
    assert iv.low is not None and iv.high is not None
    assert iv.low <= iv.mean <= iv.high
    shifted = interval([x + 10.0 for x in xs])
    assert shifted.half_width == pytest.approx(iv.half_width, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize(
    ("values", "kwargs", "want"),
    [
        ([], {}, "n/a"),
        ([0.5], {}, "0.500"),
        # mean 2, sd 1, t(0.975, 2) = 4.303: half-width 4.303 / sqrt(3)
        ([1.0, 2.0, 3.0], {}, "2.000 ± 2.484"),
        ([1.0, 2.0, 3.0], {"digits": 1, "n": True}, "2.0 ± 2.5 (n=3)"),
    ],
)
def test_mean_ci_prints_the_mean_and_the_95pct_half_width(
    values: list[float], kwargs: dict[str, Any], want: str
) -> None:
    assert mean_ci(values, **kwargs) == want
