"""What the feedback loop learnt, as JSON (``/debug/model``) and as text (``harmonic model``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harmonic.feedback.moves import MoveAdvisor
from harmonic.signals.classes import CLASSES
from harmonic.signals.feedback.learning import InterferenceLearner
from harmonic.signals.identity import WorkloadKey

_NAMES = [str(c) for c in CLASSES]


def _row(values: Any) -> list[float]:
    return [round(float(x), 4) for x in values]


def model_state(
    learner: InterferenceLearner,
    advisor: MoveAdvisor | None = None,
    decisions_log: Iterable[tuple[str, str]] = (),
) -> dict[str, Any]:
    """Prior, learned mean and standard deviation per class row; per workload its own row, baseline,
    latest reports with their placement, and its decisions: the moves recommended for it
    (``advisor``) and ``decisions_log``'s (workload, text) entries — moves decided, resizes."""
    decisions: dict[str, list[str]] = {}
    for advice in list(advisor.log) if advisor is not None else []:
        decisions.setdefault(advice.workload, []).append(advice.explain())
    for workload, text in list(decisions_log):
        decisions.setdefault(workload, []).append(text)
    classes: dict[str, Any] = {}
    for i, name in enumerate(_NAMES):
        est = learner.class_estimate(i)
        classes[name] = {
            "prior": _row(learner.prior[i]),
            "learned": _row(est.mean),
            "sd": _row(est.sd),
            "evidence": [bool(x) for x in learner.model.evidence[i]],
            "observations": est.observations,
        }
    workloads: dict[str, Any] = {}
    # Copies taken at once: the loop may add reports from the scheduler thread while a request reads.
    for key, wm in sorted(list(learner.workloads.items())):
        own = learner.workload_estimate(key)
        assert own is not None
        workloads[str(key)] = {
            "class": _NAMES[wm.klass],
            "observations": own.observations,
            "baseline": round(learner.baseline(key) or 0.0, 6),
            "learned": _row(own.mean),
            "sd": _row(own.sd),
            "recent": [
                {
                    "time": o.time,
                    "pod": o.pod,
                    "node": o.node,
                    "metric": o.metric,
                    "value": o.value,
                    "goal": o.goal,
                    "cpu_millis": o.cpu_millis,
                    "memory_bytes": o.memory_bytes,
                    "neighbours": _row(o.neighbours) if o.neighbours is not None else None,
                }
                for o in list(learner.recent.get(key, ()))
            ],
            "decisions": decisions.get(str(key), []),
        }
    return {
        "classes": _NAMES,
        "version": learner.model.version,
        "observations": learner.observations,
        "rejected": learner.rejected,
        "matrix": classes,
        "workloads": workloads,
    }


def _fmt(mean: float, sd: float) -> str:
    return f"{mean:5.2f}±{sd:4.2f}"


def render(state: dict[str, Any]) -> str:
    """Learned against prior, per victim class that has reports: ``learned±sd (prior)`` per aggressor."""
    names: list[str] = state["classes"]
    lines = [
        f"dissonance model v{state['version']}: {state['observations']} reports learnt, "
        f"{state['rejected']} rejected",
        "victim \\ aggressor: learned±sd (prior); entries no report informed stay at the prior; "
        "* marks the entries the reports pinned down, all a filter on evidence (filterBasis) refuses by",
        "",
        f"{'victim':18s} {'reports':>8s}  " + "  ".join(f"{n:>20s}" for n in names),
    ]
    for victim in names:
        row = state["matrix"][victim]
        if not row["observations"]:
            continue
        # A state from a scheduler older than the evidence marks has none.
        evidence = row.get("evidence") or [False] * len(names)
        cells = [
            f"{'*' if e else ' '}{_fmt(m, s)} ({p:4.2f})".rjust(20)
            for m, s, p, e in zip(row["learned"], row["sd"], row["prior"], evidence, strict=True)
        ]
        lines.append(f"{victim:18s} {row['observations']:8d}  " + "  ".join(cells))
    if len(lines) == 4:
        lines.append("(no reports yet: the model is the prior)")
    return "\n".join(lines) + "\n"


def explain(state: dict[str, Any], workload: str) -> str:
    """One workload: its own learned row against its class's and the prior, then its latest reports."""
    key = str(WorkloadKey.parse(workload))
    w = state["workloads"].get(key)
    if w is None:
        known = ", ".join(sorted(state["workloads"])[:10]) or "none"
        raise KeyError(f"no reports from workload {key!r}; workloads with reports: {known}")
    names: list[str] = state["classes"]
    cls = state["matrix"][w["class"]]
    lines = [
        f"workload {key} (class {w['class']}): {w['observations']} reports, undisturbed cost "
        f"{w['baseline']:g} (estimated)",
        "",
        f"{'aggressor':18s} {'workload':>12s} {'class':>12s} {'prior':>6s}",
    ]
    for i, n in enumerate(names):
        lines.append(
            f"{n:18s} {_fmt(w['learned'][i], w['sd'][i]):>12s} {_fmt(cls['learned'][i], cls['sd'][i]):>12s}"
            f" {cls['prior'][i]:6.2f}"
        )
    lines += ["", "latest reports (value; node; neighbours' CPU share by class):"]
    for r in w["recent"]:
        shares = ", ".join(f"{n}={x:.2f}" for n, x in zip(names, r["neighbours"] or (), strict=False) if x)
        lines.append(
            f"  t={r['time']:g} {r['pod']}: {r['metric']}={r['value']:g} ({r['goal']}); {r['node']}; {shares or 'alone'}"
        )
    lines += ["", "decisions (moves and resizes, with their reasons: docs/feedback.md):"]
    lines += [f"  {d}" for d in w.get("decisions", [])] or ["  none: no move or resize was called for"]
    return "\n".join(lines) + "\n"
