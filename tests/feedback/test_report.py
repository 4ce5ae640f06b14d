"""``harmonic model``'s table: learned±sd (prior) per entry, the entries the reports pinned down marked."""

from __future__ import annotations

import re

import numpy as np

from harmonic.feedback.report import model_state, render
from harmonic.signals.classes import CLASSES
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.feedback.learning import InterferenceLearner
from tests.signals.feedback.test_learning import BC, BM, LC, reports


def _lc_cells(table: str) -> list[str]:
    """The latency-critical row's cells, "[*]learned±sd (prior)" each, in aggressor order."""
    line = next(row for row in table.splitlines() if row.startswith("latency-critical"))
    cells = re.findall(r"\*?\s*\d+\.\d+±\d+\.\d+ \(\d+\.\d+\)", line)
    assert len(cells) == len(CLASSES)
    return [c.strip() for c in cells]


def test_the_entries_the_reports_pinned_down_are_marked():
    learner = InterferenceLearner(DissonanceModel())
    learner.observe(reports(np.random.default_rng(3), 400, {BM: 1.5}))
    learner.refresh()
    state = model_state(learner)
    assert state["matrix"]["latency-critical"]["evidence"][BM] is True
    assert state["matrix"]["latency-critical"]["evidence"][BC] is False
    cells = _lc_cells(render(state))
    assert cells[BM].startswith("*") and not cells[BC].startswith("*") and not cells[LC].startswith("*")


def test_a_state_without_evidence_marks_renders_unmarked():
    learner = InterferenceLearner(DissonanceModel())
    learner.observe(reports(np.random.default_rng(3), 400, {BM: 1.5}))
    learner.refresh()
    state = model_state(learner)
    for row in state["matrix"].values():
        del row["evidence"]  # as an older scheduler's /debug/model sends it
    assert not any(cell.startswith("*") for cell in _lc_cells(render(state)))
