"""Filter outcomes for a batch of nodes at once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harmonic.framework.status import Code


class Verdicts:
    """What one Filter plugin decided for each of a batch of candidate nodes.

    ``code[i]`` is the status code for the i-th candidate (``Code.SUCCESS`` = 0 passes) and
    ``reason[i]`` indexes ``reasons``, the distinct reason lists (a node may fail for several reasons
    at once, e.g. ``("Insufficient cpu", "Insufficient memory")``).
    """

    __slots__ = ("code", "reason", "reasons")

    def __init__(self, code: np.ndarray, reason: np.ndarray, reasons: Sequence[tuple[str, ...]]) -> None:
        self.code = code
        self.reason = reason
        self.reasons = list(reasons)

    @classmethod
    def failing(cls, fail: np.ndarray, code: Code, *reasons: str) -> Verdicts:
        """Nodes where ``fail`` is True get ``code`` with ``reasons``; the rest pass."""
        codes = np.where(fail, np.int8(code), np.int8(0)).astype(np.int8, copy=False)
        return cls(codes, np.zeros(len(fail), dtype=np.int32), [tuple(reasons)])

    @classmethod
    def all(cls, n: int, code: Code, *reasons: str) -> Verdicts:
        return cls(np.full(n, np.int8(code), dtype=np.int8), np.zeros(n, dtype=np.int32), [tuple(reasons)])

    @classmethod
    def from_bits(cls, bits: np.ndarray, code: Code, reason_per_bit: Sequence[str]) -> Verdicts:
        """Nodes fail where any bit is set; each distinct bit combination becomes one reason list,
        listing the reasons of its bits in bit order."""
        fail = bits != 0
        codes = np.where(fail, np.int8(code), np.int8(0)).astype(np.int8, copy=False)
        if not fail.any():
            return cls(codes, np.zeros(len(bits), dtype=np.int32), [()])
        if len(reason_per_bit) <= 12:
            # Few bits: find the combinations present by counting (linear), not by sorting.
            combos = np.flatnonzero(np.bincount(bits))
            lut = np.zeros(int(combos[-1]) + 1, dtype=np.int32)
            lut[combos] = np.arange(len(combos), dtype=np.int32)
            inverse = lut[bits]
        else:
            combos, inverse = np.unique(bits, return_inverse=True)
        reasons = [tuple(r for b, r in enumerate(reason_per_bit) if int(combo) >> b & 1) for combo in combos]
        return cls(codes, inverse.astype(np.int32, copy=False), reasons)

    @property
    def passed(self) -> np.ndarray:
        return self.code == 0

    def __len__(self) -> int:
        return len(self.code)
