"""Plugins: kube-scheduler's in-tree plugins (one module each) and Harmonic's own."""
