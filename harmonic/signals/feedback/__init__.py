"""Application feedback ("flourishing"): intake, the placement each report is stored with, and the
models learnt from it (docs/feedback.md)."""
