"""The simulation's outputs: ``metrics.json``, a single-file ``report.html`` with plots (plotly.js
inlined, no network needed to view it), and the side-by-side text table the CLI prints."""

from __future__ import annotations

import html
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harmonic.sim.engine import World
from harmonic.sim.metrics import summarize
from harmonic.sim.plan import Plan

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


def table_rows(doc: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    profiles = doc["profiles"]
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, get: Any, pct: bool = False) -> None:
        rows.append((label, [_fmt(get(m), pct) for m in profiles.values()]))

    row("pods scheduled", lambda m: m["pods_scheduled"])
    row("pods pending at end", lambda m: m["pods_pending"])
    row("pods completed", lambda m: m["pods_completed"])
    row("pods evicted / preempted", lambda m: f"{m['pods_evicted']} / {m['pods_preempted']}")
    row("nodes in use (mean)", lambda m: m["nodes_in_use"])
    row("nodes in use (peak)", lambda m: m["nodes_in_use_peak"])
    row("CPU-seconds completed", lambda m: m["cpu_seconds_completed"])
    row("zone-failure survivable share", lambda m: m["zone_failure_survivable_share"], pct=True)
    row("node-failure survivable share", lambda m: m["node_failure_survivable_share"], pct=True)
    row("cross-node traffic share", lambda m: m["cross_node_traffic_share"], pct=True)
    row("cross-zone traffic share", lambda m: m["cross_zone_traffic_share"], pct=True)
    row("added network ms / user request", lambda m: m["added_latency_ms_per_user_request"])
    apps = sorted({a for m in profiles.values() for a in m["user_request_latency_ms"]})
    for app in apps:
        for q in ("p50", "p99"):
            row(
                f"{app} request latency {q} (ms)",
                lambda m, a=app, q=q: (m["user_request_latency_ms"].get(a) or {}).get(q),
            )
        row(
            f"{app} request latency p99, M/M/c (ms)",
            lambda m, a=app: (m["user_request_latency_ms_pooled"].get(a) or {}).get("p99"),
        )
        row(
            f"{app} utilisation (mean / busiest)",
            lambda m, a=app: _utilisation(m["application_utilisation"].get(a)),
        )
    for app in sorted({a for m in profiles.values() for a in m.get("requests_served_during_outage", {})}):
        row(
            f"{app} requests served in outage",
            lambda m, a=app: m["requests_served_during_outage"].get(a),
            pct=True,
        )
    row("LC slowdown, truth (mean)", lambda m: m["latency_critical_slowdown_truth"]["mean"], pct=True)
    row("LC slowdown, truth (p95)", lambda m: m["latency_critical_slowdown_truth"]["p95"], pct=True)
    for variant in ("x0.5", "x2", "mixed"):
        row(
            f"LC slowdown, truth {variant} (mean)",
            lambda m, v=variant: m["truth_perturbed"][v]["latency_critical_slowdown_truth"]["mean"],
            pct=True,
        )
    row("batch slowdown, truth (mean)", lambda m: m["batch_slowdown_truth"]["mean"], pct=True)
    row("batch slowdown, truth (p95)", lambda m: m["batch_slowdown_truth"]["p95"], pct=True)
    row("LC slowdown, model (mean)", lambda m: m["latency_critical_slowdown"], pct=True)
    row("time to schedule p50 (s)", lambda m: m["time_to_schedule_seconds"]["p50"])
    row("time to schedule p99 (s)", lambda m: m["time_to_schedule_seconds"]["p99"])
    row("CPU allocation mean", lambda m: m["allocation"]["cpu"]["mean"], pct=True)
    row("CPU allocation stdev", lambda m: m["allocation"]["cpu"]["stdev"], pct=True)
    row("memory allocation mean", lambda m: m["allocation"]["memory"]["mean"], pct=True)
    row("memory allocation stdev", lambda m: m["allocation"]["memory"]["stdev"], pct=True)
    row("unusable free CPU (pending pods)", lambda m: m["fragmentation"]["unusable_cpu_share"], pct=True)
    row("CPU stranded while pods wait (cores)", lambda m: m["stranded_cpu_cores_while_pending"])
    row("decisions per second (wall)", lambda m: m["decisions_per_second"])
    return rows


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


def figures(worlds: Mapping[str, World], doc: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
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
    for resource, idx in (("CPU", 0), ("memory", 1)):
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
    return out


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


def render_html(doc: Mapping[str, Any], worlds: Mapping[str, World]) -> str:
    sc = doc["scenario"]
    names = list(doc["profiles"])
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = "".join(
        f"<tr><td>{html.escape(label)}</td>{''.join(f'<td>{html.escape(v)}</td>' for v in vals)}</tr>"
        for label, vals in table_rows(doc)
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
    figs = figures(worlds, doc)
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
</style>
<script>{_plotly_js()}</script>
</head><body>
<h1>Simulation: {html.escape(sc["name"])}</h1>{_plotly_missing()}
<p>{html.escape(" · ".join(facts))}. Metrics: <a href="metrics.json">metrics.json</a>.</p>
<h2>Side by side</h2>
<table id="summary"><thead><tr><th>metric</th>{head}</tr></thead><tbody>{body}</tbody></table>
{"".join(divs)}
<section><h2>Pending pods and notes</h2>{"".join(reasons)}</section>
<script>{"".join(scripts)}</script>
</body></html>
"""


def write_report(out_dir: str | Path, plan: Plan, worlds: Mapping[str, World]) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = metrics_document(plan, worlds)
    (out / "metrics.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "report.html").write_text(render_html(doc, worlds))
    return doc
