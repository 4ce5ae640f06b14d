"""``harmonic ui``: the decision explorer in the browser (why a pod landed where it did, why another waits)."""
