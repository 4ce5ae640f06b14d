"""Kubernetes objects compiled once into compact, scheduler-ready views.

Manifests (``kubectl get -o json`` shape) come in as plain dicts; these modules turn them into
immutable views with parsed quantities, request vectors and compiled selectors.
"""
