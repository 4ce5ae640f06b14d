"""Small-sample statistics for seed sweeps: mean, sample standard deviation and a two-sided 95%
confidence interval with Student's t, without scipy.

The t quantiles for 1..30 degrees of freedom are the published table values (0.975 quantile); above
30 the Cornish-Fisher expansion of t around the normal quantile is used, which agrees with the table
to 1e-5 at 30 degrees of freedom and tends to the normal limit 1.959964.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: t_{0.975, df} for df = 1..30.
_T975 = (
    12.706205,
    4.302653,
    3.182446,
    2.776445,
    2.570582,
    2.446912,
    2.364624,
    2.306004,
    2.262157,
    2.228139,
    2.200985,
    2.178813,
    2.160369,
    2.144787,
    2.131450,
    2.119905,
    2.109816,
    2.100922,
    2.093024,
    2.085963,
    2.079614,
    2.073873,
    2.068658,
    2.063899,
    2.059539,
    2.055529,
    2.051831,
    2.048407,
    2.045230,
    2.042272,
)
_Z975 = 1.959963985


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (two-sided 95%)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, not {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z, v = _Z975, float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with their sample standard deviation and 95% CI half-width (both None
    for a single value: one seed says nothing about the spread)."""

    n: int
    mean: float
    stdev: float | None
    half_width: float | None

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "n": self.n,
            "mean": _round(self.mean),
            "stdev": _round(self.stdev),
            "ci95_half_width": _round(self.half_width),
            "ci95_low": _round(self.low),
            "ci95_high": _round(self.high),
        }


def mean_ci(values: Sequence[float], digits: int = 3, n: bool = False) -> str:
    """``"mean ± half-width"`` of the 95% interval (the mean alone for one value, "n/a" for none), as
    the benchmarks print their figures; ``n`` appends the count."""
    if not values:
        return "n/a"
    iv = interval(values)
    hw = f" ± {iv.half_width:.{digits}f}" if iv.half_width is not None else ""
    return f"{iv.mean:.{digits}f}{hw}" + (f" (n={iv.n})" if n else "")


def interval(values: Sequence[float]) -> Interval:
    if not values:
        raise ValueError("no values")
    n = len(values)
    mean = math.fsum(values) / n
    if n == 1:
        return Interval(1, mean, None, None)
    stdev = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    return Interval(n, mean, stdev, t975(n - 1) * stdev / math.sqrt(n))


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 9)
