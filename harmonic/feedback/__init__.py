"""The feedback loop: applications' own reports of how they flourish drive the dissonance model
(docs/feedback.md). Intake and learning live in ``harmonic.signals.feedback``; this package runs the
loop beside a live scheduler and explains what it learnt."""

#: Where ``harmonic run`` and ``harmonic extender`` serve what the loop learnt (``harmonic model URL``).
MODEL_PATH = "/debug/model"
