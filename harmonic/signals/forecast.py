"""Seasonal forecasts of usage: additive Holt-Winters with the residuals' spread.

``holt_winters(y, season)`` smooths a level and a seasonal profile of length ``season`` (steps) through
the history ``y`` (oldest first), picking the smoothing constants from a small grid by one-step-ahead
squared error, and returns a ``Forecast``: the mean for each of the next ``horizon`` steps and the
standard deviation of the one-step errors. With one season of history but not two, the last season
repeats (seasonal naive), its spread that of the season-on-season differences (or of the one-step
errors of a smoothed level while there are none); with less than one season there is no seasonal
profile yet: the forecast is the smoothed level (simple exponential smoothing), flat. With
``statsmodels`` installed (``pip install harmonic[forecast]``) and ``backend="statsmodels"``, its
``ExponentialSmoothing`` fits the same model by maximum likelihood instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: (alpha, gamma) candidates: level and seasonal smoothing.
_GRID = ((0.2, 0.1), (0.4, 0.1), (0.2, 0.3), (0.4, 0.3), (0.7, 0.2))


@dataclass(frozen=True)
class Forecast:
    #: Mean for steps 1..horizon ahead.
    mean: np.ndarray
    #: Standard deviation of one-step-ahead errors (the spread around the mean).
    std: float

    def peak(self, steps: int, k: float) -> float:
        """Highest mean over the next ``steps`` plus ``k`` standard deviations."""
        n = max(1, min(steps, len(self.mean)))
        return float(self.mean[:n].max()) + k * self.std


def _smooth(y: np.ndarray, season: int, alpha: float, gamma: float) -> tuple[float, np.ndarray, float]:
    """Level, seasonal profile (aligned so index 0 is the step after ``y``) and sum of squared errors."""
    m = season
    level = float(y[:m].mean())
    seas = y[:m] - level
    sse = 0.0
    for t in range(m, len(y)):
        s = seas[t % m]
        err = y[t] - (level + s)
        sse += err * err
        new_level = level + alpha * err
        seas[t % m] = s + gamma * (y[t] - new_level - s)
        level = new_level
    start = len(y) % m
    return level, np.roll(seas, -start), sse / max(1, len(y) - m)


def _ses(y: np.ndarray, alpha: float = 0.3) -> tuple[float, float]:
    level = float(y[0])
    sse = 0.0
    for v in y[1:].tolist():
        err = v - level
        sse += err * err
        level += alpha * err
    return level, sse / max(1, len(y) - 1)


def holt_winters(y: np.ndarray, season: int, horizon: int, backend: str = "numpy") -> Forecast:
    y = np.asarray(y, dtype=np.float64)
    horizon = max(1, horizon)
    if len(y) == 0:
        return Forecast(np.zeros(horizon), 0.0)
    if season >= 2 and season <= len(y) < 2 * season:
        steps = np.arange(horizon) % season
        diffs = y[season:] - y[:-season]
        spread = float(diffs.std()) if len(diffs) > 1 else float(np.sqrt(_ses(y)[1]))
        return Forecast(np.maximum(y[-season:][steps], 0.0), spread)
    if season < 2 or len(y) < 2 * season:
        level, mse = _ses(y)
        std = max(float(np.sqrt(mse)), float(y.std()) if len(y) > 1 else 0.0)
        return Forecast(np.full(horizon, max(level, 0.0)), std)
    if backend == "statsmodels":
        return _statsmodels(y, season, horizon)
    best: tuple[float, float, np.ndarray] | None = None
    for alpha, gamma in _GRID:
        level, seas, mse = _smooth(y.copy(), season, alpha, gamma)
        if best is None or mse < best[0]:
            best = (mse, level, seas)
    assert best is not None
    mse, level, seas = best
    steps = np.arange(horizon) % season
    return Forecast(np.maximum(level + seas[steps], 0.0), float(np.sqrt(mse)))


def _statsmodels(y: np.ndarray, season: int, horizon: int) -> Forecast:
    from statsmodels.tsa.holtwinters import ExponentialSmoothing  # type: ignore[import-not-found, import-untyped, unused-ignore]

    fit = ExponentialSmoothing(y, trend=None, seasonal="add", seasonal_periods=season).fit()
    resid = np.asarray(fit.resid)
    return Forecast(np.maximum(np.asarray(fit.forecast(horizon)), 0.0), float(resid.std()))
