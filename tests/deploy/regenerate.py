"""Write ``deploy/*.yaml`` from ``charts/harmonic``: ``python -m tests.deploy.regenerate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.deploy.helm import render_chart

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "harmonic"
NAMESPACE = "harmonic-system"

#: deploy file -> values file layered over the chart's defaults (None: defaults only).
RENDERED = {
    "harmonic-scheduler.yaml": None,
    "harmonic-extender.yaml": "values-extender.yaml",
}


def expected(values: str | None) -> list[dict[str, Any]]:
    overrides = yaml.safe_load((CHART / values).read_text()) if values else {}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [ns, *render_chart(CHART, overrides, NAMESPACE)]


def main() -> None:
    for name, values in RENDERED.items():
        header = (
            f"# Rendered from charts/harmonic{' with ' + values if values else ''} by "
            "`python -m tests.deploy.regenerate`; edit the chart, not this file.\n"
        )
        body = yaml.safe_dump_all(expected(values), sort_keys=False, default_flow_style=False)
        (ROOT / "deploy" / name).write_text(header + body)


if __name__ == "__main__":
    main()
