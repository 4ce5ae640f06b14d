// The decision explorer's views over harmonic ui's JSON API. Data is written with textContent only
// (pod and node names come from the cluster). Tables sort with tablesort, the graph is cytoscape.js.
"use strict";

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || `${path}: HTTP ${r.status}`);
  return body;
}

const state = { info: null, summaries: [], selected: null, graph: null, cy: null, views: {} };

// ------------------------------------------------------------------ tabs
function show(view) {
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== `view-${view}`;
  if (view === "graph" && state.cy) state.cy.resize();
  if (state.views[view]) return Promise.resolve();
  state.views[view] = true;
  return Promise.resolve(({ decisions: loadDecisions, pending: loadPending, graph: loadGraph, metrics: loadMetrics })[view]());
}

// ------------------------------------------------------------------ decisions
async function loadDecisions() {
  const params = new URLSearchParams();
  const profile = $("#profile-select").value;
  if (profile) params.set("profile", profile);
  state.summaries = await api(`/api/decisions?${params}`);
  renderList();
}

// The list pages rather than rendering thousands of rows; the count says how many exist.
const PAGE = 200;

function renderList() {
  const q = $("#pod-search").value.trim();
  const rows = state.summaries.filter((s) => !q || s.pod.includes(q));
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  state.page = Math.min(state.page || 0, pages - 1);
  const from = state.page * PAGE;
  const shown = rows.slice(from, from + PAGE);
  const of = rows.length === state.summaries.length ? "" : ` (of ${state.summaries.length})`;
  $("#decision-count").textContent = rows.length
    ? `${from + 1}–${from + shown.length} of ${rows.length} decisions${of}`
    : `0 decisions${of}`;
  $("#page-prev").disabled = state.page === 0;
  $("#page-next").disabled = state.page >= pages - 1;
  const list = $("#decision-list");
  list.replaceChildren(
    ...shown.map((s) =>
      el(
        "li",
        {
          "data-id": s.id,
          tabindex: "0",
          role: "option",
          class: s.id === state.selected ? "selected" : "",
          on: { click: () => openDecision(s.id), keydown: listKey },
        },
        el("span", { class: "pod-name", title: s.pod }, s.pod),
        el("span", { class: "muted" }, s.profile),
        el("span", { class: `badge ${s.result}` }, s.result),
      ),
    ),
  );
}

function listKey(ev) {
  const li = ev.currentTarget;
  if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); li.click(); }
  else if (ev.key === "ArrowDown" && li.nextElementSibling) { ev.preventDefault(); li.nextElementSibling.focus(); }
  else if (ev.key === "ArrowUp" && li.previousElementSibling) { ev.preventDefault(); li.previousElementSibling.focus(); }
}

function turnPage(step) {
  state.page = (state.page || 0) + step;
  renderList();
}

async function openDecision(id) {
  state.selected = id;
  for (const li of document.querySelectorAll("#decision-list li")) li.classList.toggle("selected", Number(li.dataset.id) === id);
  const d = await api(`/api/decisions/${id}`);
  renderDecision(d);
}

function renderDecision(d) {
  const pane = $("#decision-detail");
  const kv = el("dl", { class: "kv" });
  const add = (k, v) => kv.append(el("dt", {}, k), el("dd", {}, v));
  add("pod", d.pod);
  add("profile", d.profile);
  add("result", el("span", { class: `badge ${d.result}`, id: "decision-result" }, d.result));
  add("node", el("span", { id: "decision-node" }, d.node || "—"));
  if (d.message) add("message", el("span", { id: "decision-message" }, d.message));
  add("nodes", d.source === "extender/prioritize"
    ? `${d.nodes.all} sent by kube-scheduler to score`
    : `${d.nodes.all} in the cluster, ${d.nodes.evaluated} evaluated, ${d.nodes.feasible} feasible`);
  add("recorded", `${d.source} ${when(d)} (decision ${d.id})`);
  if (d.preFilter) add("PreFilter", `${d.preFilter.code} from ${d.preFilter.plugin || "?"}: ${d.preFilter.message}`);
  if (d.nominatedNode) add("nominated node", `${d.nominatedNode.node} (${d.nominatedNode.passed ? "passed every filter" : "failed a filter"})`);
  if (d.choice) {
    add("choice", el("span", { id: "decision-choice" }, `${d.choice.node}${d.choice.total === null ? "" : ` with total ${d.choice.total}`}`));
    add("tie-break", el("span", { id: "decision-tiebreak" }, `${d.choice.tieBreak} (${d.choice.ties.join(", ")})`));
  }
  if (d.postFilter) add("PostFilter", `${d.postFilter.message || "—"}${d.postFilter.nominatedNode ? ` — nominated ${d.postFilter.nominatedNode}` : ""}`);
  pane.replaceChildren(
    el("h2", {}, d.pod),
    el("p", { id: "decision-verdict", class: `verdict ${d.result}` }, d.verdict || d.message || d.result),
    scoreSection(d),
    kv,
    filterSection(d),
  );
}

// Live decisions carry wall-clock time; a simulation's time is virtual seconds since its start.
function when(d) {
  if (state.info.mode === "live" && d.wallTime) return `at ${new Date(d.wallTime * 1000).toLocaleString()}`;
  return `at t=${d.time}s`;
}

function filterSection(d) {
  if (d.source === "extender/prioritize") {
    return el("section", {}, el("h3", {}, "Filter"), el("p", { class: "muted" }, `Prioritize runs no filter: these ${d.passed.length} nodes are the ones kube-scheduler sent, after its own filters and the extender's filter call (a separate decision).`));
  }
  const rows = d.filter.map((r) => [r.node, r.code, r.plugin, r.reasons.join(", ")]);
  for (const n of d.passed) rows.push([n, "Success", "", ""]);
  const table = el(
    "table",
    { id: "filter-table" },
    el("thead", {}, el("tr", {}, ["Node", "Verdict", "Plugin", "Reasons"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", { "data-node": r[0] }, r.map((c) => el("td", {}, c))))),
  );
  new Tablesort(table);
  // Per (plugin, reasons): how many nodes it stopped; the per-node table opens on demand when long.
  const counts = new Map();
  for (const r of d.filter) {
    const key = `${r.plugin || r.code}: ${r.reasons.join(", ")}`;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const byReason = el("ul", { id: "filter-summary" }, [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => el("li", {}, `${n} node${n === 1 ? "" : "s"} — ${k}`)));
  const long = rows.length > TOP_NODES * 2;
  const perNode = long ? el("details", {}, el("summary", {}, `every node (${rows.length})`), table) : table;
  return el(
    "section",
    {},
    el("h3", {}, `Filter (${d.filter.length} rejected, ${d.passed.length} passed)`),
    d.filter.length ? byReason : null,
    d.nodes.evaluated < d.nodes.all && !d.preFilter
      ? el("p", { class: "muted" }, `${d.nodes.all - d.nodes.evaluated} nodes were not evaluated (percentageOfNodesToScore: enough feasible nodes were found) or were left out by PreFilter.`)
      : null,
    rows.length ? perNode : el("p", { class: "muted" }, "No node was filtered."),
  );
}

// Nodes shown before "show all": the best ten by total, plus the chosen one.
const TOP_NODES = 10;
const SCORE_MODES = { weighted: "weighted (normalized × weight)", normalized: "normalized", raw: "raw Score" };

// Plugin order: by how much each put the chosen node ahead of the runner-up, then by how much it
// spread the nodes apart at all (a plugin that scores every node alike decides nothing).
function pluginOrder(s, chosen) {
  const byTotal = s.total.map((t, j) => [t, j]).filter(([, j]) => j !== chosen).sort((a, b) => b[0] - a[0]);
  const runner = byTotal.length ? byTotal[0][1] : -1;
  const key = s.plugins.map((_, i) => {
    const w = s.weighted[i];
    const diff = runner < 0 || chosen < 0 ? 0 : Math.abs(w[chosen] - w[runner]);
    return [diff, Math.max(...w) - Math.min(...w), i];
  });
  return key.sort((a, b) => b[0] - a[0] || b[1] - a[1] || a[2] - b[2]).map((k) => k[2]);
}

function scoreSection(d) {
  if (!d.scores) return el("section", {}, el("h3", {}, "Score"), el("p", { class: "muted" }, "No node was scored."));
  const s = d.scores;  // columns: s.raw[plugin][node], ...
  const chosen = d.choice ? s.nodes.indexOf(d.choice.node) : -1;
  const order = pluginOrder(s, chosen);
  const mode = state.scoreMode || "weighted";
  const byTotal = s.nodes.map((_, j) => j).sort((a, b) => s.total[b] - s.total[a]);
  let shown = state.showAllNodes ? byTotal : byTotal.slice(0, TOP_NODES);
  if (chosen >= 0 && !shown.includes(chosen)) shown = [...shown, chosen];
  const head = [
    el("th", { class: "pin-node" }, "Node"),
    el("th", { class: "pin-total", "data-sort-method": "number", "data-sort-default": "", "aria-sort": "ascending" }, "Total"),
    ...order.map((i) => el("th", { "data-sort-method": "number", title: `${s.plugins[i].name}, weight ${s.plugins[i].weight}: ${SCORE_MODES[mode]}` }, s.plugins[i].name)),
  ];
  const ties = new Set(d.choice ? d.choice.ties : []);
  const body = shown.map((j) => {
    const node = s.nodes[j];
    const cells = [el("td", { class: "pin-node", title: node }, node), el("td", { class: "num pin-total" }, s.total[j])];
    for (const i of order) cells.push(el("td", { class: "num" }, s[mode][i][j]));
    const cls = j === chosen ? "chosen" : ties.has(node) ? "tie" : "";
    return el("tr", { "data-node": node, class: cls }, cells);
  });
  const table = el("table", { id: "score-table", class: "pinned" }, el("thead", {}, el("tr", {}, head)), el("tbody", {}, body));
  new Tablesort(table, { descending: true });
  // tablesort makes each sortable header focusable and sorts on Enter as on a click.
  const modes = el(
    "select",
    { id: "score-mode", "aria-label": "score shown", on: { change: (ev) => { state.scoreMode = ev.target.value; renderDecision(d); } } },
    Object.entries(SCORE_MODES).map(([k, label]) => {
      const o = el("option", { value: k }, label);
      if (k === mode) o.selected = true;
      return o;
    }),
  );
  const more = s.nodes.length > shown.length || state.showAllNodes
    ? el(
        "button",
        { id: "show-all-nodes", on: { click: () => { state.showAllNodes = !state.showAllNodes; renderDecision(d); } } },
        state.showAllNodes ? `show the top ${TOP_NODES}` : `show all ${s.nodes.length} nodes`,
      )
    : null;
  return el(
    "section",
    {},
    el("h3", {}, `Score (${shown.length} of ${s.nodes.length} feasible nodes)`),
    el("div", { class: "controls" }, el("label", {}, "show ", modes), more),
    el("p", { class: "muted" }, "Plugins ordered by how much they separated the chosen node from the runner-up. Raw is the plugin's Score; normalized after its NormalizeScore; weighted is normalized × the profile's weight (the total is the sum of the weighted scores). Click or press Enter on a column to sort by it."),
    el("div", { class: "table-wrap" }, table),
  );
}

// ------------------------------------------------------------------ pending pods
async function loadPending() {
  state.pending = await api("/api/pending");
  renderPending();
}

function pendingText(pod, reason) {
  const parts = [pod.pod, pod.profile, reason, pod.message];
  for (const r of pod.rejections) parts.push(r.plugin, ...r.reasons, ...r.nodes);
  return parts.join(" ").toLowerCase();
}

function renderPending() {
  const q = $("#pending-filter").value.trim().toLowerCase();
  const groups = [];
  let pods = new Set();
  for (const g of state.pending) {
    const matching = g.pods.filter((p) => !q || pendingText(p, g.reason).includes(q));
    if (!matching.length) continue;
    matching.forEach((p) => pods.add(`${p.profile}/${p.pod}`));
    groups.push(
      el(
        "details",
        { class: "group", open: "", "data-reason": g.reason },
        el("summary", {}, `${g.reason} — ${matching.length} pod${matching.length === 1 ? "" : "s"}`),
        matching.map((p) =>
          el(
            "div",
            { class: "pending-pod", "data-pod": p.pod },
            el("a", { href: "#", on: { click: (ev) => { ev.preventDefault(); show("decisions"); openDecision(p.id); } } }, p.pod),
            el("span", { class: "muted" }, ` (${p.profile})`),
            p.rejections.map((r) => el("div", { class: "rejection" }, `${r.plugin}: ${r.reasons.join(", ")} — ${r.nodes.length} node${r.nodes.length === 1 ? "" : "s"}: ${r.nodes.join(", ")}`)),
          ),
        ),
      ),
    );
  }
  $("#pending-count").textContent = `${pods.size} pending pod${pods.size === 1 ? "" : "s"}`;
  $("#pending-groups").replaceChildren(...(groups.length ? groups : [el("p", { class: "muted" }, "No pending pod.")]));
}

// ------------------------------------------------------------------ affinity graph
async function loadGraph() {
  if (!state.info.graph) {
    $("#graph-message").textContent = state.info.mode === "live"
      ? "The affinity graph over time comes from simulation reports (harmonic ui --report DIR)."
      : "This report has no graph.json (run harmonic simulate --record-decisions).";
    return;
  }
  state.graph = await api("/api/graph");
  const profiles = Object.keys(state.graph.profiles);
  $("#graph-profile").replaceChildren(...profiles.map((p) => el("option", { value: p }, p)));
  if (!state.graph.edges.length) $("#graph-message").textContent = "The scenario has no topology: no traffic to draw.";
  state.cy = cytoscape({
    container: $("#graph"),
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 9, "text-valign": "center", "background-color": "#636efa", color: "#fff", "text-outline-width": 1, "text-outline-color": "#636efa" } },
      { selector: "node.zone", style: { "background-color": "#f3f4f6", "border-color": "#9ca3af", "border-width": 1, color: "#111", "text-outline-width": 0, "text-valign": "top", "font-size": 12 } },
      { selector: "node.host", style: { "background-color": "#fff", "border-color": "#d1d5db", "border-width": 1, color: "#333", "text-outline-width": 0, "text-valign": "top", "font-size": 10 } },
      { selector: "node.host.failed", style: { "border-color": "#e03c31", "border-style": "dashed" } },
      { selector: "edge", style: { width: "data(width)", "curve-style": "bezier", "target-arrow-shape": "triangle", "arrow-scale": 0.6, opacity: 0.8 } },
      { selector: "edge.same-node", style: { "line-color": "#00a86b", "target-arrow-color": "#00a86b" } },
      { selector: "edge.same-zone", style: { "line-color": "#f0a030", "target-arrow-color": "#f0a030" } },
      { selector: "edge.cross-zone", style: { "line-color": "#e03c31", "target-arrow-color": "#e03c31" } },
    ],
  });
  $("#graph-profile").addEventListener("change", () => { setGraphRange(); drawGraph(); });
  $("#graph-time").addEventListener("input", drawGraph);
  setGraphRange();
  drawGraph();
}

function setGraphRange() {
  const samples = state.graph.profiles[$("#graph-profile").value] || [];
  const slider = $("#graph-time");
  slider.max = Math.max(samples.length - 1, 0);
  slider.value = slider.max;
}

function graphElements(sample) {
  const g = state.graph;
  const zoneOf = g.zones;
  const failed = new Set(sample.failedNodes);
  const elements = [];
  const hosts = new Set();
  const totals = {};
  for (const [w, on] of Object.entries(sample.placement)) {
    totals[w] = Object.values(on).reduce((a, b) => a + b, 0);
    for (const [host, n] of Object.entries(on)) {
      hosts.add(host);
      elements.push({ group: "nodes", data: { id: `w:${w}@${host}`, parent: `n:${host}`, label: `${w.split("/").pop()} ×${n}`, workload: w } });
    }
  }
  const zones = new Set();
  for (const host of hosts) {
    const zone = zoneOf[host] || "no zone";
    zones.add(zone);
    elements.push({ group: "nodes", classes: failed.has(host) ? "host failed" : "host", data: { id: `n:${host}`, parent: `z:${zone}`, label: host } });
  }
  for (const zone of zones) elements.push({ group: "nodes", classes: "zone", data: { id: `z:${zone}`, label: zone } });
  // Traffic between two workloads spreads over their replicas: each pair of placements carries the
  // share of the edge's requests that uniform load balancing gives it.
  const maxRate = Math.max(1e-9, ...g.edges.map((e) => e.requestsPerSecond));
  for (const e of g.edges) {
    const src = sample.placement[e.src];
    const dst = sample.placement[e.dst];
    if (!src || !dst) continue;
    for (const [a, na] of Object.entries(src)) {
      for (const [b, nb] of Object.entries(dst)) {
        const rate = e.requestsPerSecond * (na / totals[e.src]) * (nb / totals[e.dst]);
        const cls = a === b ? "same-node" : (zoneOf[a] || "") === (zoneOf[b] || "") ? "same-zone" : "cross-zone";
        elements.push({ group: "edges", classes: cls, data: { id: `e:${e.src}@${a}>${e.dst}@${b}`, source: `w:${e.src}@${a}`, target: `w:${e.dst}@${b}`, rate, width: 0.5 + 5 * Math.sqrt(rate / maxRate) } });
      }
    }
  }
  return elements;
}

function drawGraph() {
  const samples = state.graph.profiles[$("#graph-profile").value] || [];
  const sample = samples[Number($("#graph-time").value)];
  if (!sample) return;
  $("#graph-time-label").textContent = `t = ${sample.time}s (sample ${Number($("#graph-time").value) + 1} of ${samples.length})`;
  const cy = state.cy;
  cy.batch(() => {
    cy.elements().remove();
    cy.add(graphElements(sample));
  });
  cy.layout({ name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true }).run();
  $("#graph").dataset.nodes = String(cy.nodes("[workload]").length);
  $("#graph").dataset.edges = String(cy.edges().length);
}

// ------------------------------------------------------------------ metrics
function loadMetrics() {
  if (!state.info.report) {
    $("#metrics-message").textContent = "Metrics and side-by-side profiles come from simulation reports (harmonic ui --report DIR).";
    $("#report-frame").hidden = true;
    return;
  }
  $("#report-frame").src = "/report/";
}

// ------------------------------------------------------------------ start
async function start() {
  try {
    state.info = await api("/api/info");
  } catch (e) {
    $("#source").textContent = String(e.message);
    return;
  }
  $("#source").textContent = `${state.info.mode === "live" ? "scheduler" : "report"}: ${state.info.source}`;
  $("#profile-select").append(...state.info.profiles.map((p) => el("option", { value: p }, p)));
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => show(b.dataset.view));
  $("#pod-search").addEventListener("input", () => { state.page = 0; renderList(); });
  $("#page-prev").addEventListener("click", () => turnPage(-1));
  $("#page-next").addEventListener("click", () => turnPage(1));
  $("#profile-select").addEventListener("change", loadDecisions);
  $("#refresh").addEventListener("click", () => { loadDecisions(); if (state.views.pending) loadPending(); });
  $("#pending-filter").addEventListener("input", renderPending);
  await show("decisions");
  document.body.dataset.ready = "true";
}

start();
