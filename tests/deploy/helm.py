"""The Helm chart rendered and linted by Helm's own library (the ``helm-python-sdk`` test dependency,
which ships Helm's Go SDK as a shared library: no ``helm`` binary, no cluster, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

RELEASE = "harmonic"


def render_templates(
    chart_dir: Path,
    overrides: dict[str, Any] | None = None,
    namespace: str = "harmonic-system",
    release: str = RELEASE,
) -> dict[str, str]:
    """Template path -> its text, NOTES.txt included, as ``helm install`` renders them; values the
    chart's values.schema.json refuses raise, naming the value."""
    with helm.Chart.load(chart_dir) as chart:
        return dict(chart.render(overrides or {}, name=release, namespace=namespace, is_install=True))


def render_chart(
    chart_dir: Path,
    overrides: dict[str, Any] | None = None,
    namespace: str = "harmonic-system",
    release: str = RELEASE,
) -> list[dict[str, Any]]:
    """Every manifest ``helm template RELEASE CHART -n NAMESPACE`` prints (hooks aside), parsed,
    template by template in path order so ``deploy/`` diffs stay readable."""
    rendered = render_templates(chart_dir, overrides, namespace, release)
    return [
        doc
        for path, text in sorted(rendered.items())
        if path.endswith((".yaml", ".yml"))
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def lint_chart(
    chart_dir: Path, values: dict[str, Any] | None = None, kube_version: str | None = None
) -> list[str]:
    """``helm lint --strict`` findings as ``SEVERITY path: message`` lines (errors included)."""
    names = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}
    report = helm.lint(chart_dir, values or {}, strict=True, kube_version=kube_version)
    return [f"{names[m['severity']]} {m['path']}: {m['error']}" for m in report["messages"]] + [
        f"ERROR {e}" for e in report["errors"]
    ]
