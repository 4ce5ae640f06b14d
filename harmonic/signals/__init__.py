"""Signals: telemetry and feedback turned into models that Harmonic's plugins read.

Sources (Prometheus mesh metrics, static topology/AppGroup seeds, the simulator's mesh) produce
workload-to-workload traffic samples; models (the affinity graph, the dissonance model) are built from
them apart from scoring, versioned and explainable. Plugins read models only, never sources.
"""
