"""The simulation's outputs: ``metrics.json``, a single-file ``report.html`` with plots (plotly.js
inlined, no network needed to view it), and the side-by-side text table the CLI prints."""

from __future__ import annotations

import html
import importlib.util
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harmonic.sim.engine import World
from harmonic.sim.metrics import summarize
from harmonic.sim.plan import AddNodes, DrainNode, FailNode, FailZone, Plan, RestoreZone

#: Stands in for plotly.js when the ``sim`` extra is not installed: the page loads, without plots.
_NO_PLOTLY = "window.Plotly = {newPlot: function () {}};"


def _plotly_js() -> str:
    """plotly.js inlined, so the report is one file that works offline; a stub without harmonic[sim]."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        return _NO_PLOTLY
    return str(get_plotlyjs())


def _plotly_missing() -> str:
    if importlib.util.find_spec("plotly") is not None:
        return ""
    return "<p><strong>Plots need plotly: <code>pip install 'harmonic[sim]'</code>.</strong></p>"


#: One colour per profile, in run order (plotly's default qualitative palette).
_COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880")


def metrics_document(plan: Plan, worlds: Mapping[str, World]) -> dict[str, Any]:
    first = next(iter(worlds.values()))
    return {
        "scenario": {
            "name": plan.name,
            "source": plan.source,
            "seed": plan.seed,
            "duration_seconds": plan.duration,
            "sample_interval_seconds": plan.sample_interval,
            "initial_nodes": len(plan.nodes),
            "actions": len(plan.timeline),
            "topologies": [t.namespace for t in plan.topologies],
            "network_model_ms": plan.network.model_dump(by_alias=True),
            "objects_without_placement_effect": plan.inert,
            "trace_rows_skipped": plan.trace_skipped,
            "virtual_seconds": round(first.clock.now(), 6),
        },
        "profiles": {name: summarize(w) for name, w in worlds.items()},
    }


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "-"
    if pct:
        return f"{100 * v:.1f}%"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _utilisation(u: Mapping[str, Any] | None) -> str | None:
    if u is None or u["mean"] is None:
        return None
    return f"{_fmt(u['mean'], pct=True)} / {_fmt(u['busiest'], pct=True)}"


#: Which way a row is better: "higher", "lower", or "" (neither: a count or a descriptive figure).
HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Row:
    """One metric across the profiles: its label, values (as measured and as printed), which direction
    is better, and what it means (from docs/simulator.md's metrics.json table)."""

    label: str
    values: list[Any]
    cells: list[str]
    better: str
    definition: str
    #: Whether profile summaries weigh it: not for figures that measure the machine, not the placement.
    judged: bool = True

    def best(self) -> set[int]:
        """Columns holding the best value; empty when no direction applies or every profile ties."""
        nums = [v for v in self.values if isinstance(v, int | float) and not isinstance(v, bool)]
        if not self.better or len(nums) < 2 or min(nums) == max(nums):
            return set()
        target = max(nums) if self.better == HIGHER else min(nums)
        return {i for i, v in enumerate(self.values) if v == target}


def rows_of(doc: Mapping[str, Any]) -> list[Row]:
    profiles = doc["profiles"]
    rows: list[Row] = []

    def row(
        label: str, get: Any, pct: bool = False, better: str = "", define: str = "", judged: bool = True
    ) -> None:
        values = [get(m) for m in profiles.values()]
        rows.append(Row(label, values, [_fmt(v, pct) for v in values], better, define, judged))

    row("pods scheduled", lambda m: m["pods_scheduled"], define="pods bound over the run")
    row("pods pending at end", lambda m: m["pods_pending"], better=LOWER, define="pods unbound at the end")
    row(
        "pods completed",
        lambda m: m["pods_completed"],
        better=HIGHER,
        define="pods that finished successfully over the run",
    )
    row(
        "pods evicted / preempted",
        lambda m: f"{m['pods_evicted']} / {m['pods_preempted']}",
        define="evicted by drains and node failures / preempted by the scheduler",
    )
    row(
        "nodes in use (mean)",
        lambda m: m["nodes_in_use"],
        better=LOWER,
        define="nodes running at least one pod not owned by a DaemonSet, time average",
    )
    row("nodes in use (peak)", lambda m: m["nodes_in_use_peak"], better=LOWER, define="the same, maximum")
    row(
        "CPU-seconds completed",
        lambda m: m["cpu_seconds_completed"],
        better=HIGHER,
        define="CPU request (cores) x run time of every pod that finished successfully",
    )
    survivable = "share of Deployments and StatefulSets with 2+ running replicas spanning 2+ {}, time average"
    row(
        "zone-failure survivable share",
        lambda m: m["zone_failure_survivable_share"],
        pct=True,
        better=HIGHER,
        define=survivable.format("zones"),
    )
    row(
        "node-failure survivable share",
        lambda m: m["node_failure_survivable_share"],
        pct=True,
        better=HIGHER,
        define=survivable.format("nodes"),
    )
    crossing = "ground truth: share of request traffic whose two ends run on different {}, time average"
    row(
        "cross-node traffic share",
        lambda m: m["cross_node_traffic_share"],
        pct=True,
        better=LOWER,
        define=crossing.format("nodes"),
    )
    row(
        "cross-zone traffic share",
        lambda m: m["cross_zone_traffic_share"],
        pct=True,
        better=LOWER,
        define=crossing.format("zones"),
    )
    row(
        "added network ms / user request",
        lambda m: m["added_latency_ms_per_user_request"],
        better=LOWER,
        define="ground truth: network round trips added per user request, time average",
    )
    apps = sorted({a for m in profiles.values() for a in m["user_request_latency_ms"]})
    for app in apps:
        for q in ("p50", "p99"):
            row(
                f"{app} request latency {q} (ms)",
                lambda m, a=app, q=q: (m["user_request_latency_ms"].get(a) or {}).get(q),
                better=LOWER,
                define=f"ground truth: {q} end-to-end latency of the sampled user requests served",
            )
        row(
            f"{app} request latency p99, M/M/c (ms)",
            lambda m, a=app: (m["user_request_latency_ms_pooled"].get(a) or {}).get("p99"),
            better=LOWER,
            define="ground truth, second latency model: p99 with each service's cores as one M/M/c queue",
        )
        row(
            f"{app} utilisation (mean / busiest)",
            lambda m, a=app: _utilisation(m["application_utilisation"].get(a)),
            define="ground truth: call-weighted mean and busiest replica's utilisation (capped at 0.95)",
        )
    for app in sorted({a for m in profiles.values() for a in m.get("requests_served_during_outage", {})}):
        row(
            f"{app} requests served in outage",
            lambda m, a=app: m["requests_served_during_outage"].get(a),
            pct=True,
            better=HIGHER,
            define="ground truth: share of user requests sampled while a zone was down that were served",
        )
    slowdown = "slowdown of running latency-critical pods from interference"
    row(
        "LC slowdown, truth (mean)",
        lambda m: m["latency_critical_slowdown_truth"]["mean"],
        pct=True,
        better=LOWER,
        define=f"ground truth: mean {slowdown}",
    )
    row(
        "LC slowdown, truth (p95)",
        lambda m: m["latency_critical_slowdown_truth"]["p95"],
        pct=True,
        better=LOWER,
        define=f"ground truth: p95 {slowdown}",
    )
    for variant in ("x0.5", "x2", "mixed"):
        row(
            f"LC slowdown, truth {variant} (mean)",
            lambda m, v=variant: m["truth_perturbed"][v]["latency_critical_slowdown_truth"]["mean"],
            pct=True,
            better=LOWER,
            define=f"the same under a ground truth perturbed {variant}: robustness to a wrong model",
        )
    batch = "slowdown of running batch pods from interference, CPU-weighted (their work advances at 1/(1+s))"
    row(
        "batch slowdown, truth (mean)",
        lambda m: m["batch_slowdown_truth"]["mean"],
        pct=True,
        better=LOWER,
        define=f"ground truth: mean {batch}",
    )
    row(
        "batch slowdown, truth (p95)",
        lambda m: m["batch_slowdown_truth"]["p95"],
        pct=True,
        better=LOWER,
        define=f"ground truth: p95 {batch}",
    )
    row(
        "LC slowdown, model (mean)",
        lambda m: m["latency_critical_slowdown"],
        pct=True,
        better=LOWER,
        define=f"the scheduler's own model: mean {slowdown}",
    )
    row(
        "time to schedule p50 (s)",
        lambda m: m["time_to_schedule_seconds"]["p50"],
        better=LOWER,
        define="virtual seconds from a pod's creation to its binding, median",
    )
    row(
        "time to schedule p99 (s)",
        lambda m: m["time_to_schedule_seconds"]["p99"],
        better=LOWER,
        define="the same, 99th percentile",
    )
    allocation = "requests / allocatable per node"
    row(
        "CPU allocation mean",
        lambda m: m["allocation"]["cpu"]["mean"],
        pct=True,
        define=f"CPU {allocation}, mean over nodes and samples",
    )
    row(
        "CPU allocation stdev",
        lambda m: m["allocation"]["cpu"]["stdev"],
        pct=True,
        define=f"CPU {allocation}, spread across nodes (low: balanced, high: packed)",
    )
    row(
        "memory allocation mean",
        lambda m: m["allocation"]["memory"]["mean"],
        pct=True,
        define=f"memory {allocation}, mean over nodes and samples",
    )
    row(
        "memory allocation stdev",
        lambda m: m["allocation"]["memory"]["stdev"],
        pct=True,
        define=f"memory {allocation}, spread across nodes",
    )
    row(
        "unusable free CPU (pending pods)",
        lambda m: m["fragmentation"]["unusable_cpu_share"],
        pct=True,
        better=LOWER,
        define="share of free CPU no pending pod could use (fragmentation)",
    )
    row(
        "CPU stranded while pods wait (cores)",
        lambda m: m["stranded_cpu_cores_while_pending"],
        better=LOWER,
        define="free CPU cores while pods were pending, time average",
    )
    row(
        "decisions per second (wall)",
        lambda m: m["decisions_per_second"],
        better=HIGHER,
        define="scheduling attempts per wall-clock second of the simulator (machine-dependent)",
        judged=False,
    )
    return rows


def table_rows(doc: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    return [(r.label, r.cells) for r in rows_of(doc)]


#: Rows a profile summary names on each side (the largest relative changes).
SUMMARY_ROWS = 3
#: Relative changes below this are left out of a profile summary: within a run's noise, not a trade-off.
MIN_CHANGE = 0.01


def profile_summaries(doc: Mapping[str, Any]) -> dict[str, str]:
    """One line per profile but the first (the baseline, kube-scheduler's default): the rows where it
    does better and worse than the baseline, largest relative change first."""
    names = list(doc["profiles"])
    out: dict[str, str] = {}
    rows = [r for r in rows_of(doc) if r.better and r.judged]
    for i, name in enumerate(names[1:], start=1):
        gains: list[tuple[float, str]] = []
        costs: list[tuple[float, str]] = []
        for r in rows:
            base, v = r.values[0], r.values[i]
            if not isinstance(base, int | float) or not isinstance(v, int | float) or base == v:
                continue
            change = (v - base) / abs(base) if base else float("inf")
            if abs(change) < MIN_CHANGE:
                continue
            good = (v > base) == (r.better == HIGHER)
            text = f"{r.label} {r.cells[0]} → {r.cells[i]}"
            (gains if good else costs).append((abs(change), text))
        gains.sort(key=lambda g: -g[0])
        costs.sort(key=lambda c: -c[0])
        better = "; ".join(t for _, t in gains[:SUMMARY_ROWS]) or "nothing"
        worse = "; ".join(t for _, t in costs[:SUMMARY_ROWS]) or "nothing"
        out[name] = f"against {names[0]}: better on {better}. Worse on {worse}."
    return out


def format_table(doc: Mapping[str, Any]) -> str:
    names = list(doc["profiles"])
    rows = table_rows(doc)
    w0 = max(len("metric"), *(len(r[0]) for r in rows))
    widths = [max(len(n), *(len(r[1][i]) for r in rows)) for i, n in enumerate(names)]
    lines = ["  ".join(["metric".ljust(w0), *(n.rjust(w) for n, w in zip(names, widths, strict=True))])]
    lines.append("  ".join(["-" * w0, *("-" * w for w in widths)]))
    for label, vals in rows:
        lines.append("  ".join([label.ljust(w0), *(v.rjust(w) for v, w in zip(vals, widths, strict=True))]))
    return "\n".join(lines)


# --------------------------------------------------------------------------- figures
def _layout(title: str, ytitle: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "xaxis": {"title": {"text": extra.pop("xtitle", "virtual time (minutes)")}},
        "yaxis": {"title": {"text": ytitle}},
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"t": 50, "b": 110},
        **extra,
    }


#: Past this many nodes, per-node bars are unreadable: the report shows the distribution instead.
MAX_NODE_BARS = 50


def event_markers(plan: Plan) -> list[tuple[float, str]]:
    """The scenario's cluster events as (virtual minute, label), for the timelines' vertical markers."""
    out: list[tuple[float, str]] = []
    for t in plan.timeline:
        a = t.action
        if plan.duration is not None and t.time > plan.duration:
            break  # the run ended before it: a marker would stretch the time axis past the data
        if isinstance(a, AddNodes):
            label = f"{len(a.nodes)} node{'s' if len(a.nodes) != 1 else ''} added"
        elif isinstance(a, DrainNode):
            label = f"{a.node} drained"
        elif isinstance(a, FailNode):
            label = f"{a.node} failed"
        elif isinstance(a, FailZone):
            label = f"{a.zone} down"
        elif isinstance(a, RestoreZone):
            label = f"{a.zone} restored"
        else:
            continue
        out.append((t.time / 60, label))
    return out


def _with_markers(layout: dict[str, Any], markers: list[tuple[float, str]]) -> dict[str, Any]:
    """A timeline's layout with a dotted vertical line and a label at each scenario event."""
    shapes = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": m,
            "x1": m,
            "y0": 0,
            "y1": 1,
            "line": {"color": "#999", "width": 1, "dash": "dot"},
        }
        for m, _ in markers
    ]
    notes = [
        {
            "x": m,
            "y": 1,
            "xref": "x",
            "yref": "paper",
            "text": label,
            "showarrow": False,
            "textangle": -90,
            "xanchor": "right",
            "yanchor": "top",
            "font": {"size": 9, "color": "#666"},
        }
        for m, label in markers
    ]
    return {**layout, "shapes": shapes, "annotations": notes}


def figures(
    worlds: Mapping[str, World], doc: Mapping[str, Any], markers: list[tuple[float, str]] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    util: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    in_use: list[dict[str, Any]] = []
    locality_t: list[dict[str, Any]] = []
    latency_t: list[dict[str, Any]] = []
    for i, (name, w) in enumerate(worlds.items()):
        s = w.recorder.series
        colour = _COLOURS[i % len(_COLOURS)]
        minutes = [t / 60 for t in s.time]
        util.append(_line(minutes, s.cpu_mean, f"{name} CPU", colour, percent=True))
        util.append(_line(minutes, s.memory_mean, f"{name} memory", colour, percent=True, dash="dot"))
        pending.append(_line(minutes, s.pending, name, colour))
        in_use.append(_line(minutes, s.nodes_in_use, name, colour))
        for j, (ns, ts) in enumerate(sorted(w.truth.series.traffic.items())):
            p99 = w.truth.series.worlds["truth"].latency_p99.get(ns, [])
            latency_t.append(
                _line(
                    minutes,
                    p99[: len(minutes)],
                    f"{name} {ns}",
                    colour,
                    False,
                    ("solid", "dash", "dot", "dashdot")[j % 4],
                )
            )
            dash = ("solid", "dash", "dot", "dashdot")[j % 4]
            locality_t.append(_line(minutes, ts.cross_node, f"{name} {ns} cross-node", colour, True, dash))
            locality_t.append(_line(minutes, ts.cross_zone, f"{name} {ns} cross-zone", colour, True, "dot"))
    out.append(
        (
            "Allocation over time",
            {
                "data": util,
                "layout": _layout(
                    "Mean node allocation (requests / allocatable)",
                    "allocation",
                    yaxis={"title": {"text": "allocation"}, "tickformat": ".0%"},
                ),
            },
        )
    )
    out.append(("Pending pods", {"data": pending, "layout": _layout("Pending pods", "pods")}))
    out.append(
        (
            "Nodes in use",
            {"data": in_use, "layout": _layout("Nodes running workload pods (DaemonSets aside)", "nodes")},
        )
    )
    many = max((len(w.recorder.final_allocation) for w in worlds.values()), default=0) > MAX_NODE_BARS
    for resource, idx in (("CPU", 0), ("memory", 1)):
        if many:
            out.append(_allocation_distribution(worlds, resource, idx))
            continue
        bars = []
        for i, (name, w) in enumerate(worlds.items()):
            alloc = w.recorder.final_allocation
            nodes = sorted(alloc, key=_natural)
            bars.append(
                {
                    "type": "bar",
                    "name": name,
                    "x": nodes,
                    "y": [alloc[n][idx] for n in nodes],
                    "marker": {"color": _COLOURS[i % len(_COLOURS)]},
                }
            )
        out.append(
            (
                f"Per-node {resource} allocation",
                {
                    "data": bars,
                    "layout": _layout(
                        f"{resource} allocation per node at the end",
                        "allocation",
                        xtitle="node",
                        barmode="group",
                        yaxis={"title": {"text": "allocation"}, "tickformat": ".0%"},
                    ),
                },
            )
        )
    profiles = doc["profiles"]
    if any(m["cross_node_traffic_share"] is not None for m in profiles.values()):
        names = list(profiles)
        bars = [
            {
                "type": "bar",
                "name": "cross-node",
                "x": names,
                "y": [profiles[n]["cross_node_traffic_share"] for n in names],
            },
            {
                "type": "bar",
                "name": "cross-zone",
                "x": names,
                "y": [profiles[n]["cross_zone_traffic_share"] for n in names],
            },
        ]
        out.append(
            (
                "Traffic locality",
                {
                    "data": bars,
                    "layout": _layout(
                        "Share of request traffic crossing nodes and zones (time average)",
                        "share of requests",
                        xtitle="profile",
                        barmode="group",
                        yaxis={"title": {"text": "share of requests"}, "tickformat": ".0%"},
                    ),
                },
            )
        )
        out.append(
            (
                "Traffic locality over time",
                {
                    "data": locality_t,
                    "layout": _layout(
                        "Traffic crossing nodes / zones",
                        "share",
                        yaxis={"title": {"text": "share"}, "tickformat": ".0%"},
                    ),
                },
            )
        )
    if latency_t:
        out.append(
            (
                "User-request latency (ground truth)",
                {
                    "data": latency_t,
                    "layout": _layout("p99 latency of sampled user requests, per application", "ms"),
                },
            )
        )
    if markers:
        timelines = {"Allocation over time", "Pending pods", "Nodes in use", "Traffic locality over time"}
        timelines.add("User-request latency (ground truth)")
        out = [
            (title, {**fig, "layout": _with_markers(fig["layout"], markers)})
            if title in timelines
            else (title, fig)
            for title, fig in out
        ]
    return out


def _allocation_distribution(
    worlds: Mapping[str, World], resource: str, idx: int
) -> tuple[str, dict[str, Any]]:
    """How many nodes end at each allocation level, one outline per profile (a bar per node would be a
    thousand slivers)."""
    traces = [
        {
            "type": "histogram",
            "name": name,
            "x": [a[idx] for a in w.recorder.final_allocation.values()],
            "xbins": {"start": 0, "end": 1.0001, "size": 0.05},
            "opacity": 0.55,
            "marker": {"color": _COLOURS[i % len(_COLOURS)]},
        }
        for i, (name, w) in enumerate(worlds.items())
    ]
    layout = _layout(
        f"{resource} allocation across nodes at the end (distribution)",
        "nodes",
        xtitle="allocation (requests / allocatable)",
        barmode="overlay",
    )
    layout["xaxis"]["tickformat"] = ".0%"
    # Idle nodes dwarf the rest of a large cluster: a log scale keeps the few busy levels visible.
    layout["yaxis"]["type"] = "log"
    return f"Per-node {resource} allocation", {"data": traces, "layout": layout}


def _natural(name: str) -> list[Any]:
    """general-2 before general-10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _line(
    x: list[float], y: list[Any], name: str, colour: str, percent: bool = False, dash: str = "solid"
) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "line": {"color": colour, "dash": dash, "shape": "hv"},
    }
    if percent:
        trace["hovertemplate"] = "%{y:.1%}"
    return trace


# --------------------------------------------------------------------------- HTML
def _script_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def render_html(
    doc: Mapping[str, Any], worlds: Mapping[str, World], markers: list[tuple[float, str]] | None = None
) -> str:
    sc = doc["scenario"]
    names = list(doc["profiles"])
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = "".join(_html_row(r) for r in rows_of(doc))
    summaries = "".join(
        f"<li><strong>{html.escape(n)}</strong> {html.escape(line)}</li>"
        for n, line in profile_summaries(doc).items()
    )
    reasons = []
    for n, m in doc["profiles"].items():
        items = "".join(f"<li>{c} × {html.escape(r)}</li>" for r, c in m["pending_reasons"].items())
        notes = "".join(f"<li>{html.escape(x)}</li>" for x in m["notes"])
        reasons.append(
            f"<h3>{html.escape(n)}</h3><p>Pending at the end: {m['pods_pending']}</p>"
            + (f"<ul>{items}</ul>" if items else "")
            + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "")
        )
    figs = figures(worlds, doc, markers)
    divs = []
    scripts = []
    for i, (title, fig) in enumerate(figs):
        divs.append(f'<section><h2>{html.escape(title)}</h2><div id="fig{i}" class="fig"></div></section>')
        scripts.append(
            f"Plotly.newPlot('fig{i}', {_script_json(fig['data'])}, {_script_json(fig['layout'])}, "
            "{responsive: true, displaylogo: false});"
        )
    skipped = sc["trace_rows_skipped"]
    inert = sc["objects_without_placement_effect"]
    facts = [
        f"seed {sc['seed']}",
        f"{sc['initial_nodes']} initial nodes",
        f"{sc['actions']} timeline actions",
        f"{sc['virtual_seconds'] / 60:.0f} virtual minutes",
        f"profiles: {', '.join(names)}",
    ]
    if inert:
        facts.append(
            "accepted without effect on placement: " + ", ".join(f"{v} {k}" for k, v in inert.items())
        )
    if skipped:
        facts.append("trace rows skipped: " + ", ".join(f"{v} ({k})" for k, v in skipped.items()))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Harmonic simulation: {html.escape(sc["name"])}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }}
table {{ border-collapse: collapse; }} td, th {{ padding: .3rem .8rem; border-bottom: 1px solid #ddd; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }} .fig {{ height: 420px; }}
td.best {{ background: #e6f7ec; font-weight: 600; }} td[title] {{ cursor: help; text-decoration: underline dotted #aaa; }}
.arrow {{ color: #888; }}
</style>
<script>{_plotly_js()}</script>
</head><body>
<h1>Simulation: {html.escape(sc["name"])}</h1>{_plotly_missing()}
<p>{html.escape(" · ".join(facts))}. Metrics: <a href="metrics.json">metrics.json</a>.</p>
<h2>Side by side</h2>
<ul id="profile-summaries">{summaries}</ul>
<p class="legend">▲ higher is better, ▼ lower is better; the best value of a row is highlighted. Hover a
metric for its definition.</p>
<table id="summary"><thead><tr><th>metric</th>{head}</tr></thead><tbody>{body}</tbody></table>
{"".join(divs)}
<section><h2>Pending pods and notes</h2>{"".join(reasons)}</section>
<script>{"".join(scripts)}</script>
</body></html>
"""


def _html_row(r: Row) -> str:
    arrow = {HIGHER: " <span class=arrow>▲</span>", LOWER: " <span class=arrow>▼</span>"}.get(r.better, "")
    best = r.best()
    cells = "".join(
        f"<td{' class=best' if i in best else ''}>{html.escape(v)}</td>" for i, v in enumerate(r.cells)
    )
    return f'<tr><td title="{html.escape(r.definition)}">{html.escape(r.label)}{arrow}</td>{cells}</tr>'


def write_report(out_dir: str | Path, plan: Plan, worlds: Mapping[str, World]) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = metrics_document(plan, worlds)
    (out / "metrics.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "report.html").write_text(render_html(doc, worlds, event_markers(plan)))
    return doc
