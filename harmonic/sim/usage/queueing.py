"""How a pod's CPU request shapes how it flourishes (part of the ground truth).

A pod's CPU request is what it is guaranteed; as its CPU use nears it, work queues. The pod is taken as
an M/M/c server with ``c`` = its request in cores (at least one) and utilisation ``rho`` = use / request
(capped at ``RHO_MAX``), and its cost per unit of work (a latency, a time per item) grows by the factor

    1 + rho^(sqrt(2 (c + 1)) - 1) / (c (1 - rho))

Sakasegawa's approximation of the M/M/c mean wait in units of the service time (Sakasegawa, *An
approximation formula L_q = alpha beta^rho / (1 - rho)*, Annals of the ISM 1977; as used by Hopp &
Spearman, *Factory Physics*). A pod asking 3x what it uses barely queues; one asking what it uses
queues without bound. Only the simulated applications' reports (``harmonic.sim.feedback``) read it.
"""

from __future__ import annotations

import numpy as np

#: Utilisation at which a pod counts as saturated.
RHO_MAX = 0.95


def response_factor(use_millis: np.ndarray, request_millis: np.ndarray) -> np.ndarray:
    """The cost multiplier of pods using ``use_millis`` of CPU with ``request_millis`` requested."""
    req = np.maximum(np.asarray(request_millis, dtype=np.float64), 1.0)
    rho = np.clip(np.asarray(use_millis, dtype=np.float64) / req, 0.0, RHO_MAX)
    c = np.maximum(req / 1000.0, 1.0)
    out: np.ndarray = 1.0 + rho ** (np.sqrt(2.0 * (c + 1.0)) - 1.0) / (c * (1.0 - rho))
    return out


def smallest_request(use_millis: np.ndarray, bound: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per pod, the smallest request (millicores, to 1m) whose factor at ``use_millis`` is at most
    ``bound``; ``hi`` where even that is not enough. The factor falls as the request grows, so a
    bisection finds it."""
    lo = np.asarray(use_millis, dtype=np.float64).copy()
    top = np.asarray(hi, dtype=np.float64).copy()
    ok = response_factor(use_millis, top) <= bound
    for _ in range(40):
        mid = (lo + top) / 2
        fits = response_factor(use_millis, mid) <= bound
        top = np.where(fits, mid, top)
        lo = np.where(fits, lo, mid)
    return np.where(ok, np.ceil(top), hi)
