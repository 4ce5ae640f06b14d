"""Harmonic: a Kubernetes scheduler that keeps kube-scheduler's decisions and adds application harmony."""

__version__ = "0.1.0"
