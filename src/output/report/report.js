/* report.js — the page of `omniprof report`: reads the summaries that the C side aggregated
 * (the JSON in <script id="omniprof-data">, its layout in docs/report.md) and draws the
 * overview, sortable tables with bars, the timeline, the flame graph, causal plots and the
 * per-rank imbalance. No library and no network: plain DOM, SVG and canvas.
 *
 * Self-check: once everything is drawn, the page writes what it drew (sections, tables, rows,
 * charts with their painted pixels, errors caught) as JSON into the hidden element with id
 * omniprof-selfcheck and sets the body's data-selfcheck attribute to "ok" or "fail"; the tests
 * read it with Chromium's --dump-dom. */
"use strict";
var OP_ERRORS = [];
window.addEventListener("error", function (e) { OP_ERRORS.push(String(e.message || e)); });
(function () {
  var origError = console.error;
  console.error = function () {
    OP_ERRORS.push(Array.prototype.map.call(arguments, String).join(" "));
    origError.apply(console, arguments);
  };
})();

var CHECK = { sections: [], tables: 0, table_rows: 0, charts: 0, painted: 0, flame_nodes: 0,
              timeline_lanes: 0, causal_points: 0, rank_bars: 0 };
var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
               "#9c755f", "#bab0ac", "#2f6690", "#d37295"];

/* ---- small helpers ---------------------------------------------------------------------- */
function el(tag, attrs, children) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) {
    if (k === "text") e.textContent = attrs[k];
    else if (k === "cls") e.className = attrs[k];
    else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
    else e.setAttribute(k, attrs[k]);
  }
  (children || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
  return e;
}
function fmtNs(ns) {
  if (ns == null || isNaN(ns)) return "";
  var a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e11 ? 0 : 3) + " s";
  if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 1 : 3) + " ms";
  if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e5 ? 1 : 2) + " µs";
  return Math.round(ns) + " ns";
}
function fmtInt(n) { return n == null ? "" : Math.round(n).toLocaleString("en-US"); }
function fmtNum(v) {
  if (v == null || isNaN(v)) return "";
  var a = Math.abs(v);
  if (a !== 0 && (a >= 1e7 || a < 1e-3)) return v.toExponential(3);
  return a >= 100 ? fmtInt(v) : (+v.toPrecision(5)).toString();
}
function fmtPct(v) { return (v == null || isNaN(v)) ? "" : v.toFixed(v >= 10 ? 1 : 2) + " %"; }
function fmtBytes(b) {
  var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
  while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : Math.round(b)) + " " + u[i];
}
function fmtValue(v, units) {
  if (units === "ns") return fmtNs(v);
  if (units === "bytes") return fmtBytes(v);
  return fmtNum(v);
}
function hashColor(s) {
  var h = 2166136261;
  for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  var hue = 10 + ((h >>> 0) % 50);          /* warm flame colours */
  var light = 55 + ((h >>> 8) % 15);
  return "hsl(" + hue + ",85%," + light + "%)";
}
var tip = null;
function showTip(ev, text) {
  if (!tip) tip = document.getElementById("tooltip");
  tip.textContent = text;
  tip.hidden = false;
  var x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + 420 > window.innerWidth) x = Math.max(4, ev.clientX - 420);
  if (y + 80 > window.innerHeight) y = ev.clientY - 60;
  tip.style.left = x + "px";
  tip.style.top = y + "px";
}
function hideTip() { if (tip) tip.hidden = true; }

/* A canvas sized for the device's pixels; returns its 2D context scaled to CSS pixels. */
function setupCanvas(cv, cssW, cssH) {
  var r = window.devicePixelRatio || 1;
  cv.width = Math.max(1, Math.round(cssW * r));
  cv.height = Math.max(1, Math.round(cssH * r));
  cv.style.height = cssH + "px";
  var g = cv.getContext("2d");
  g.setTransform(r, 0, 0, r, 0, 0);
  return g;
}
/* Counts a drawn chart for the self-check: painted when any pixel is not transparent. */
function chartDrawn(cv) {
  CHECK.charts++;
  try {
    var g = cv.getContext("2d"), d = g.getImageData(0, 0, cv.width, cv.height).data;
    for (var i = 3; i < d.length; i += 4 * 7) if (d[i] !== 0) { CHECK.painted++; return; }
  } catch (e) { OP_ERRORS.push("chart check: " + e); }
}
function svgEl(tag, attrs) {
  var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

/* ---- sortable tables with bars ------------------------------------------------------------
 * cols: [{key, title, num, fmt, bar}] over row objects; the bar column draws the value of
 * `bar` relative to the largest. Renders the first 200 rows (a button shows all). */
function dataTable(parent, cols, rows, opt) {
  opt = opt || {};
  var wrap = el("div", { cls: "tablewrap" });
  var tools = el("div", { cls: "tools" });
  var filter = el("input", { type: "search", placeholder: "filter names…" });
  var more = el("button", { text: "" });
  var info = el("span", { cls: "note" });
  tools.appendChild(filter); tools.appendChild(info); tools.appendChild(more);
  parent.appendChild(tools);
  parent.appendChild(wrap);
  var table = el("table", { cls: "data" });
  var thead = el("thead"), tbody = el("tbody"), hr = el("tr");
  thead.appendChild(hr); table.appendChild(thead); table.appendChild(tbody); wrap.appendChild(table);
  var sortKey = opt.sort || cols[0].key, desc = opt.desc !== false, limit = opt.limit || 200, showAll = false;
  var barCol = cols.filter(function (c) { return c.bar; })[0];
  var ths = cols.map(function (c) {
    var th = el("th", { cls: c.num ? "num" : "", text: c.title, title: "sort by " + c.title });
    th.addEventListener("click", function () {
      if (sortKey === c.key) desc = !desc; else { sortKey = c.key; desc = !!c.num; }
      render();
    });
    hr.appendChild(th);
    return th;
  });
  if (barCol) hr.appendChild(el("th", { text: barCol.barTitle || "" }));
  filter.addEventListener("input", render);
  more.addEventListener("click", function () { showAll = !showAll; render(); });
  function render() {
    var q = filter.value.toLowerCase();
    var rs = q ? rows.filter(function (r) { return String(r[cols[0].key]).toLowerCase().indexOf(q) >= 0; }) : rows.slice();
    rs.sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      if (x === y) return 0;
      if (typeof x === "string" || typeof y === "string") return desc ? String(y).localeCompare(String(x)) : String(x).localeCompare(String(y));
      return desc ? (y - x) : (x - y);
    });
    var max = 0;
    if (barCol) rs.forEach(function (r) { if (r[barCol.bar] > max) max = r[barCol.bar]; });
    var n = showAll ? rs.length : Math.min(rs.length, limit);
    var frag = document.createDocumentFragment();
    for (var i = 0; i < n; i++) {
      var r = rs[i], tr = el("tr");
      cols.forEach(function (c) {
        var v = r[c.key];
        var td = el("td", { cls: c.num ? "num" : (c.mono === false ? "" : "name"), text: c.fmt ? c.fmt(v, r) : (v == null ? "" : String(v)) });
        if (c.sub && r[c.sub]) { td.appendChild(el("div", { cls: "sub", text: r[c.sub] })); td.title = String(v) + "\n" + r[c.sub]; }
        tr.appendChild(td);
      });
      if (barCol) {
        var w = max > 0 ? 100 * r[barCol.bar] / max : 0;
        var bar = el("div", { cls: "bar" });
        bar.style.width = w.toFixed(1) + "%";
        if (opt.barColor) bar.style.background = opt.barColor(r);
        tr.appendChild(el("td", { cls: "barcell" }, [bar]));
      }
      frag.appendChild(tr);
    }
    tbody.textContent = "";
    tbody.appendChild(frag);
    ths.forEach(function (th, i) {
      th.className = (cols[i].num ? "num " : "") + (cols[i].key === sortKey ? (desc ? "sorted-desc" : "sorted-asc") : "");
    });
    info.textContent = rs.length === rows.length ? rows.length + " rows" : rs.length + " of " + rows.length + " rows";
    more.hidden = rs.length <= limit;
    more.textContent = showAll ? "show the first " + limit : "show all " + rs.length;
  }
  render();
  CHECK.tables++;
  CHECK.table_rows += rows.length;
  return table;
}

/* ---- sections ---------------------------------------------------------------------------- */
var D = null, MAIN = null, NAV = null;
function section(id, title) {
  var s = el("section", { id: id }, [el("h2", { text: title })]);
  MAIN.appendChild(s);
  NAV.appendChild(el("a", { href: "#" + id, text: title }));
  CHECK.sections.push(id);
  return s;
}
function procLabel(p) {
  return (p.rank >= 0 ? "rank " + p.rank + " · " : "") + "pid " + p.pid + (p.host ? " · " + p.host : "");
}

function renderOverview() {
  var o = D.overview, s = section("overview", "Overview");
  var procs = o.processes || [];
  var cmds = [];
  procs.forEach(function (p) { if (p.command && cmds.indexOf(p.command) < 0) cmds.push(p.command); });
  var ranks = procs.filter(function (p) { return p.rank >= 0; }).length;
  var hosts = o.hosts || [];
  var cards = el("div", { cls: "cards" });
  function card(v, label) { cards.appendChild(el("div", { cls: "card" }, [el("b", { text: v }), el("span", { text: label })])); }
  card(fmtNs(o.duration_ns), "duration");
  card(fmtInt(procs.length), ranks ? "processes (" + ranks + " ranks)" : "processes");
  card(fmtInt(hosts.length), hosts.length === 1 ? "host" : "hosts");
  card(fmtInt((o.agents || []).filter(function (a) { return a.type === "GPU"; }).length), "GPUs");
  card(fmtInt(o.threads), "threads");
  var ev = 0;
  for (var k in o.counts) ev += o.counts[k];
  card(fmtInt(ev), "events");
  var dropped = (o.drops || []).reduce(function (a, d) { return a + d.count; }, 0);
  card(fmtInt(dropped), "records dropped");
  s.appendChild(cards);
  var kv = el("dl", { cls: "kv" });
  function row(k, v, cls) { kv.appendChild(el("dt", { text: k })); kv.appendChild(el("dd", { text: v, cls: cls || "" })); }
  row(cmds.length > 1 ? "commands" : "command", cmds.join("\n") || "(not recorded)");
  row("inputs", (D.inputs || []).join(", "));
  row("hosts", hosts.map(function (h) { return h.name + (h.system ? " (" + [h.system, h.release, h.hardware].filter(Boolean).join(" ") + ")" : ""); }).join(", ") || "(unknown)");
  row("time span", fmtNs(o.duration_ns) + " from " + o.t0 + " to " + o.t1 + " ns (CLOCK_MONOTONIC)");
  var cnt = [];
  for (var c in o.counts) if (o.counts[c]) cnt.push(fmtInt(o.counts[c]) + " " + c.replace(/_/g, " "));
  row("recorded", cnt.join(", ") || "nothing");
  row("generated", D.generator + ", " + D.created);
  s.appendChild(kv);
  if (procs.length) {
    s.appendChild(el("h3", { text: "Processes" + (ranks ? " and ranks" : "") }));
    dataTable(s, [
      { key: "pid", title: "pid", num: true, fmt: String },
      { key: "rank", title: "rank", num: true, fmt: function (v) { return v >= 0 ? String(v) : ""; } },
      { key: "host", title: "host", mono: false },
      { key: "threads", title: "threads", num: true, fmt: fmtInt },
      { key: "duration", title: "duration", num: true, fmt: fmtNs, bar: "duration" },
      { key: "command", title: "command" }
    ], procs.map(function (p) {
      return { pid: p.pid, rank: p.rank, host: p.host, threads: p.threads, command: p.command,
               duration: (p.end > p.start) ? p.end - p.start : 0 };
    }), { sort: "rank", desc: false, limit: 50 });
  }
  if ((o.agents || []).length) {
    s.appendChild(el("h3", { text: "Agents" }));
    dataTable(s, [
      { key: "type", title: "type", mono: false },
      { key: "index", title: "index", num: true, fmt: String },
      { key: "name", title: "name" },
      { key: "process", title: "process", mono: false }
    ], o.agents.map(function (a) {
      return { type: a.type, index: a.index, name: a.name, process: procs[a.process] ? procLabel(procs[a.process]) : "" };
    }), { sort: "type", desc: false, limit: 50 });
  }
  s.appendChild(el("h3", { text: "What profiling cost" }));
  var cost = o.cost || [], cv = {};
  cost.forEach(function (c) { cv[c.name] = c.value; });
  if (!cost.length) s.appendChild(el("p", { cls: "note", text: "The inputs record no run cost (omniprof_run_cost)." }));
  else {
    var parts = [];
    if (cv.tool_init_ns != null) parts.push("start-up " + fmtNs(cv.tool_init_ns));
    if (cv.tool_callback_ns != null) parts.push("delivering records " + fmtNs(cv.tool_callback_ns));
    if (cv.db_ingest_busy_ns != null) parts.push("writing the database " + fmtNs(cv.db_ingest_busy_ns) + " (its own thread)");
    var line = parts.length ? "The profiler's own work: " + parts.join(", ") : "";
    if (cv.tool_memory_bytes != null) line += (line ? "; " : "") + fmtBytes(cv.tool_memory_bytes) + " of memory";
    if (cv.tool_records != null) line += (line ? "; " : "") + fmtInt(cv.tool_records) + " records";
    if (cv.db_rows_written != null) line += " → " + fmtInt(cv.db_rows_written) + " rows";
    if (line) s.appendChild(el("p", { text: line + " (all processes)." }));
    var det = el("details", {}, [el("summary", { text: "every measure (" + cost.length + ")" })]);
    s.appendChild(det);
    dataTable(det, [
      { key: "name", title: "measure" },
      { key: "value", title: "value (all processes)", num: true, fmt: function (v, r) { return fmtValue(v, r.units); } },
      { key: "units", title: "units", mono: false }
    ], cost, { sort: "name", desc: false, limit: 60 });
  }
  var drops = o.drops || [];
  s.appendChild(el("h3", { text: "Records dropped" }));
  if (!drops.length || !dropped) s.appendChild(el("p", { cls: "ok", text: "No record was dropped." }));
  else {
    s.appendChild(el("p", { cls: "warn", text: fmtInt(dropped) + " records were dropped: the profile is incomplete." }));
    dataTable(s, [
      { key: "buffer", title: "buffer" }, { key: "cause", title: "cause" },
      { key: "count", title: "records", num: true, fmt: fmtInt, bar: "count" }
    ], drops, { sort: "count" });
  }
  var bp = (o.backpressure || []).filter(function (b) { return b.waits > 0; });
  if (bp.length) {
    s.appendChild(el("h3", { text: "Back-pressure (program threads waiting for buffer space)" }));
    dataTable(s, [
      { key: "buffer", title: "buffer" }, { key: "waits", title: "waits", num: true, fmt: fmtInt },
      { key: "wait_ns", title: "time waited", num: true, fmt: fmtNs, bar: "wait_ns" }
    ], bp, { sort: "wait_ns" });
  }
}

/* Which section a summary domain belongs to. */
function domainClass(d) {
  if (/^(MPI|NCCL|RCCL|OSHMEM|SHMEM)/.test(d)) return "mpi";
  if (d === "KERNEL_DISPATCH") return "kernels";
  if (/^MEMORY_/.test(d)) return "memory";
  if (/MARKER|ROCTX|NVTX|USER/.test(d)) return "regions";
  return "api";
}
function statRows(t) {
  return t.rows.map(function (r) {
    return { name: r[0], calls: r[1], total: r[2], avg: r[1] ? r[2] / r[1] : 0, min: r[3], max: r[4], sd: r[5],
             pct: t.total > 0 ? 100 * r[2] / t.total : 0, domain: t.domain,
             bytes: r.length > 6 ? r[6] : null,
             bw: r.length > 6 && r[2] > 0 ? r[6] / (r[2] / 1e9) : null };
  });
}
var STAT_COLS = [
  { key: "name", title: "name" },
  { key: "calls", title: "calls", num: true, fmt: fmtInt },
  { key: "total", title: "total", num: true, fmt: fmtNs, bar: "total", barTitle: "share of total" },
  { key: "pct", title: "%", num: true, fmt: fmtPct },
  { key: "avg", title: "average", num: true, fmt: fmtNs },
  { key: "min", title: "min", num: true, fmt: fmtNs },
  { key: "max", title: "max", num: true, fmt: fmtNs },
  { key: "sd", title: "stddev", num: true, fmt: fmtNs }
];
var BYTE_COLS = [
  { key: "bytes", title: "bytes", num: true,
    fmt: function (v) { return v == null ? "" : fmtBytes(v); } },
  { key: "bw", title: "bandwidth", num: true,
    fmt: function (v) { return v == null ? "" : fmtBytes(v) + "/s"; } }
];
function renderStatSection(id, title, tables, blurb) {
  if (!tables.length) return;
  var s = section(id, title);
  if (blurb) s.appendChild(el("p", { cls: "note", text: blurb }));
  tables.forEach(function (t) {
    s.appendChild(el("h3", { text: t.domain + " — " + fmtInt(t.calls) + " calls, " + fmtNs(t.total) }));
    if (t.rows_total > t.rows.length)
      s.appendChild(el("p", { cls: "note", text: "The " + t.rows.length + " largest of " + fmtInt(t.rows_total) + " names." }));
    /* copies, memsets and MPI calls: the bytes they moved and the rate over their time */
    var rows = statRows(t), moved = rows.some(function (r) { return r.bytes != null; });
    dataTable(s, moved ? STAT_COLS.concat(BYTE_COLS) : STAT_COLS, rows, { sort: "total" });
  });
}
function renderTables() {
  var by = { kernels: [], api: [], regions: [], mpi: [], memory: [] };
  (D.tables || []).forEach(function (t) { by[domainClass(t.domain)].push(t); });
  renderStatSection("kernels", "Top kernels", by.kernels, "GPU kernels by total time on the device.");
  renderStatSection("api", "API calls", by.api, "Host API calls (CUDA runtime and driver, OpenCL, wrapped functions, ...), by total time.");
  renderStatSection("regions", "Regions", by.regions, "User-API and NVTX ranges, by total time (ranges nest: totals include what runs inside).");
  renderStatSection("mpi", "MPI calls", by.mpi, "MPI and collective-library calls, by total time.");
  renderStatSection("memory", "Memory operations", by.memory, "Copies, memsets and allocations, by total time.");
}

function renderCounters() {
  var cs = D.counters || [];
  if (!cs.length) return;
  (D.counter_series || []).forEach(function (x) { if (cs[x[0]]) cs[x[0]].series = x[1]; });
  var s = section("counters", "Counters");
  s.appendChild(el("p", { cls: "note", text: "Hardware counters (one value per kernel dispatch or device read) and process/system metrics (sampled over time)." }));
  dataTable(s, [
    { key: "name", title: "counter" },
    { key: "kind", title: "kind", mono: false },
    { key: "units", title: "units", mono: false },
    { key: "count", title: "values", num: true, fmt: fmtInt },
    { key: "sum", title: "sum", num: true, fmt: fmtNum, bar: "sum", barTitle: "sum (relative)" },
    { key: "mean", title: "mean", num: true, fmt: fmtNum },
    { key: "min", title: "min", num: true, fmt: fmtNum },
    { key: "max", title: "max", num: true, fmt: fmtNum }
  ], cs.map(function (c) {
    return { name: c.name, kind: c.kind, units: c.units || "", count: c.count, sum: c.sum, mean: c.count ? c.sum / c.count : 0,
             min: c.min, max: c.max };
  }), { sort: "sum" });
  var series = cs.filter(function (c) { return c.series && c.series.length > 1; });
  if (!series.length) return;
  s.appendChild(el("h3", { text: "Metrics over time" }));
  var box = el("div", { cls: "plots" });
  s.appendChild(box);
  series.slice(0, 24).forEach(function (c) {
    var p = el("div", { cls: "plot" }, [el("div", { cls: "title", text: c.name + (c.units ? " (" + c.units + ")" : "") })]);
    var cv = el("canvas");
    p.appendChild(cv);
    box.appendChild(p);
    var W = 316, H = 90, g = setupCanvas(cv, W, H);
    var t0 = D.overview.t0, span = Math.max(1, D.overview.t1 - t0);
    var lo = Infinity, hi = -Infinity;
    c.series.forEach(function (pt) { lo = Math.min(lo, pt[1]); hi = Math.max(hi, pt[1]); });
    if (hi === lo) { hi = lo + 1; }
    g.strokeStyle = "#4e79a7"; g.lineWidth = 1.5; g.beginPath();
    c.series.forEach(function (pt, i) {
      var x = 4 + (W - 8) * (pt[0] - t0) / span, y = H - 14 - (H - 24) * (pt[1] - lo) / (hi - lo);
      if (i) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
    g.fillStyle = "#667085"; g.font = "10px sans-serif";
    g.fillText(fmtValue(hi, c.units), 4, 10);
    g.fillText(fmtValue(lo, c.units), 4, H - 2);
    chartDrawn(cv);
  });
}

/* ---- timeline ----------------------------------------------------------------------------
 * Lanes (one per process x thread x region category, thread of CPU samples, GPU stream of
 * kernels or of copies) grouped per process, then the extra tracks the data gives (D.tracks,
 * D.critical_path; docs/report.md). Level of detail, chosen per lane at each draw: the C
 * side's `busy` bins while a bin is no wider than a pixel (the first paint decodes no event),
 * then 65,536 finer bins built from the events once, then the events of the window themselves
 * (found by binary search), nested by depth, named when wide enough. Events are decoded from
 * their base64 varint columns the first time a lane needs them.
 * Wheel or +/- to zoom, drag to pan, shift+drag (or the "select" mode) selects a time range
 * over the lanes dragged across and lists what ran there (Perfetto's area selection); click an
 * event for its details and its flows (launch -> kernel or copy by correlation id, MPI send ->
 * receive); click a process header to collapse it; double-click to reset.
 * window.OP_TIMELINE: the view's state and actions, for tests and for other scripts. */
function b64Bytes(s) {
  var bin = atob(s), n = bin.length, u = new Uint8Array(n);
  for (var i = 0; i < n; i++) u[i] = bin.charCodeAt(i);
  return u;
}
/* Decodes the events of a lane (cols: s start delta, d duration, n name, h depth,
 * c correlation zigzag delta, b bytes). */
function decodeEvents(l, text) {
  var u = b64Bytes(text), p = 0, n = l.n, cols = l.cols;
  function col(zig, delta) {
    var out = new Float64Array(n), acc = 0;
    for (var k = 0; k < n; k++) {
      var v = 0, mul = 1, b;
      do { b = u[p++]; v += (b & 127) * mul; mul *= 128; } while (b & 128);
      if (zig) v = (v % 2) ? -(v + 1) / 2 : v / 2;
      if (delta) { acc += v; v = acc; }
      out[k] = v;
    }
    return out;
  }
  var E = { n: n, start: null, dur: null, name: null, depth: null, corr: null, bytes: null };
  for (var i = 0; i < cols.length; i++) {
    var c = cols[i];
    if (c === "s") E.start = col(false, true);
    else if (c === "d") E.dur = col(false, false);
    else if (c === "n") E.name = col(false, false);
    else if (c === "h") E.depth = col(false, false);
    else if (c === "c") E.corr = col(true, true);
    else if (c === "b") E.bytes = col(false, false);
  }
  if (!E.dur) E.dur = new Float64Array(n);
  return finishEvents(E);
}
/* The running maximum of the ends (the first event that can reach into a window). */
function finishEvents(E) {
  var m = new Float64Array(E.n), mx = -Infinity;
  for (var k = 0; k < E.n; k++) { var e = E.start[k] + E.dur[k]; if (e > mx) mx = e; m[k] = mx; }
  E.maxEnd = m;
  return E;
}
function lowerBound(a, n, v) {
  var lo = 0, hi = n;
  while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid] < v) lo = mid + 1; else hi = mid; }
  return lo;
}
/* A segment of an extra track: [start, dur, name] or {start, dur | end, name | label}. */
function segOf(s) {
  if (Array.isArray(s))
    return { start: +s[0], dur: +s[1] || 0, name: s[2] == null ? "" : String(s[2]) };
  var st = +s.start, d = s.dur != null ? +s.dur : (s.end != null ? +s.end - st : 0);
  return { start: st, dur: d > 0 ? d : 0, name: String(s.name != null ? s.name : (s.label || "")) };
}
function renderTimeline() {
  var T = D.timeline || { lanes: [], names: [], t0: D.overview.t0, t1: D.overview.t1, bins: 0 };
  var extra = (D.tracks || []).slice();
  var cp = D.critical_path;  /* report_findings.c: {t0, segments: [[from t0, to t0, label]...]} */
  if (cp && Array.isArray(cp.segments))
    cp = cp.segments.map(function (g) { return [cp.t0 + g[0], g[1] - g[0], g[2]]; });
  if (Array.isArray(cp) && cp.length)
    extra.push({ title: "critical path", lanes: [{ label: "critical path", kind: "critical path",
                                                   segments: cp }] });
  if (!T.lanes.length && !extra.length) return;
  var s = section("timeline", "Timeline");
  var lanes = T.lanes.slice(), names = T.names.slice(), span = Math.max(1, T.t1 - T.t0);
  var nEvents = 0;
  lanes.forEach(function (l) { nEvents += l.n || 0; });
  s.appendChild(el("p", { cls: "note", text: "Every event per process, thread and GPU stream (" +
    lanes.length + " lanes" + (T.omitted ? ", " + T.omitted + " quieter lanes left out" : "") +
    ", " +
    fmtInt(nEvents) + " events at event level). Zoomed out, bar height is the share of time busy " +
    "(or the sample density); zoom in to single events. Wheel or +/− to zoom, drag to pan, " +
    "shift+drag to select a range (its statistics appear below), click an event for its details " +
    "and flows, click a process to fold it, double-click to reset." }));
  /* the groups: each process, then each extra track */
  var groups = [], byP = {};
  lanes.forEach(function (l, i) {
    l.idx = i;
    if (!(l.p in byP)) {
      byP[l.p] = groups.length;
      groups.push({ p: l.p, lanes: [], collapsed: false });
    }
    groups[byP[l.p]].lanes.push(i);
  });
  extra.forEach(function (tr, ti) {
    var g = { p: -1, title: String(tr.title || "track " + (ti + 1)), lanes: [], collapsed: false };
    (tr.lanes || []).forEach(function (tl) {
      var segs = (tl.segments || []).map(segOf).filter(function (x) { return isFinite(x.start); });
      segs.sort(function (a, b) { return a.start - b.start || b.dur - a.dur; });
      var n = segs.length, E = { n: n, start: new Float64Array(n), dur: new Float64Array(n),
                                 name: new Float64Array(n), depth: null, corr: null, bytes: null };
      segs.forEach(function (x, k) {
        E.start[k] = x.start - T.t0; E.dur[k] = x.dur;
        var ni = names.indexOf(x.name);
        if (ni < 0) { ni = names.length; names.push(x.name); }
        E.name[k] = ni;
      });
      var l = { p: -1, label: String(tl.label || g.title), kind: String(tl.kind || g.title),
                busy: [],
                spans: [], n: n, depth: 1, E: finishEvents(E), idx: lanes.length, extra: true };
      lanes.push(l);
      g.lanes.push(l.idx);
    });
    groups.push(g);
  });
  var tools = el("div", { cls: "tools" });
  var label = el("span", { cls: "note" });
  var bIn = el("button", { text: "+" }), bOut = el("button", { text: "−" });
  var bReset = el("button", { text: "reset" }), bSel = el("button", { text: "select" });
  var bZoomSel = el("button", { text: "zoom to selection" });
  [bIn, bOut, bReset, bSel, bZoomSel, label].forEach(function (b) { tools.appendChild(b); });
  s.appendChild(tools);
  var box = el("div", { cls: "chartbox" }), cv = el("canvas");
  box.appendChild(cv); s.appendChild(box);
  var details = el("div", { cls: "note" }), selBox = el("div");
  s.appendChild(details); s.appendChild(selBox);
  var kinds = [], colorOf = {};
  lanes.forEach(function (l) { if (kinds.indexOf(l.kind) < 0) kinds.push(l.kind); });
  kinds.forEach(function (k, i) { colorOf[k] = PALETTE[i % PALETTE.length]; });
  var legend = el("div", { cls: "legend" });
  kinds.forEach(function (k) {
    legend.appendChild(el("span", {}, [el("i", { style: "background:" + colorOf[k] }), k]));
  });
  s.insertBefore(legend, box);
  var SUB = 14, LABEL = 250, AXIS = 22, HEAD = 18;
  function laneRows(l) { return Math.max(1, Math.min(6, l.depth || 1)); }
  function laneH(l) { return laneRows(l) * SUB + 4; }
  var maxBusy = lanes.map(function (l) {
    var m = 0, b = l.busy || [];
    for (var i = 0; i < b.length; i++) if (b[i] > m) m = b[i];
    return l.kind === "CPU samples" ? Math.max(1, m) : 1000;
  });
  /* a lane's events, decoded once; null while the browser has not parsed their element yet */
  function events(l) {
    if (!l.E && l.ev) {
      var e = document.getElementById(l.ev);
      if (!e) return null;
      l.E = decodeEvents(l, e.textContent);
    }
    return l.E || null;
  }
  /* level 1: 65,536 bins of busy time (or samples) built from the events once */
  var FINE = 65536;
  function fineBins(l) {
    if (l.fine) return l.fine;
    var E = events(l), f = new Float32Array(FINE), bw = span / FINE, mx = 0;
    for (var k = 0; k < E.n; k++) {
      var a = E.start[k], d = E.dur[k];
      if (l.kind === "CPU samples" || d <= 0) {
        f[Math.min(FINE - 1, Math.floor(a / bw))] += 1;
        continue;
      }
      var i0 = Math.max(0, Math.floor(a / bw)), i1 = Math.min(FINE - 1, Math.floor((a + d) / bw));
      for (var i = i0; i <= i1; i++) {
        var lo = Math.max(a, i * bw), hi = Math.min(a + d, (i + 1) * bw);
        if (hi > lo) f[i] += hi - lo;
      }
    }
    if (l.kind !== "CPU samples")
      for (var j = 0; j < FINE; j++) f[j] = Math.min(1000, 1000 * f[j] / bw);
    else for (var q = 0; q < FINE; q++) if (f[q] > mx) mx = f[q];
    l.fine = f; l.fineMax = l.kind === "CPU samples" ? Math.max(1, mx) : 1000;
    return f;
  }
  /* the layout: y of each group header and lane, from the collapsed state */
  var layout = [], H = 0;
  function doLayout() {
    layout = []; var y = AXIS;
    groups.forEach(function (g, gi) {
      layout.push({ g: gi, y: y, h: HEAD }); y += HEAD;
      if (!g.collapsed) g.lanes.forEach(function (li) {
        var h = laneH(lanes[li]); layout.push({ lane: li, y: y, h: h }); y += h;
      });
    });
    H = y + 4;
  }
  doLayout();
  var v0 = 0, v1 = span, W = 0, sel = null, picked = null, selMode = false;
  var stats = { lod: {}, events_drawn: 0, flows_drawn: 0, lanes_drawn: 0 };
  var corrIndex = {};  /* process -> Map(correlation id -> [lane, event]) of its API events */
  function launchOf(p, c) {
    if (!corrIndex[p]) {
      var m = new Map();
      lanes.forEach(function (l) {
        if (l.p !== p || !l.cols || l.cols.indexOf("c") < 0 || /^GPU/.test(l.kind)) return;
        var E = events(l);
        for (var k = 0; E && k < E.n; k++) if (E.corr[k]) m.set(E.corr[k], [l.idx, k]);
      });
      corrIndex[p] = m;
    }
    return corrIndex[p].get(c);
  }
  function gpuOf(p, c) {
    var out = [];
    lanes.forEach(function (l) {
      if (l.p !== p || !/^GPU/.test(l.kind) || !l.cols || l.cols.indexOf("c") < 0) return;
      var E = events(l);
      for (var k = 0; E && k < E.n; k++) if (E.corr[k] === c) out.push([l.idx, k]);
    });
    return out;
  }
  var laneY = {};
  function evBox(li, k, plotW) {
    var l = lanes[li], E = events(l), per = (v1 - v0) / plotW, y = laneY[li];
    if (y == null || !E) return null;
    var row = Math.min(laneRows(l) - 1, E.depth ? E.depth[k] : 0);
    return { x0: LABEL + (E.start[k] - v0) / per, x1: LABEL + (E.start[k] + E.dur[k] - v0) / per,
             y: y + 2 + row * SUB + SUB / 2 };
  }
  function arrow(g, a, b, color) {
    var xa = a.x1, xb = b.x0;
    g.strokeStyle = color; g.fillStyle = color; g.lineWidth = 1.2;
    g.beginPath(); g.moveTo(xa, a.y);
    g.bezierCurveTo(xa + 30, a.y, xb - 30, b.y, xb, b.y); g.stroke();
    g.beginPath(); g.moveTo(xb, b.y); g.lineTo(xb - 6, b.y - 3); g.lineTo(xb - 6, b.y + 3);
    g.fill();
    stats.flows_drawn++;
  }
  function drawLane(g, l, y, plotW) {
    var col = colorOf[l.kind], per = (v1 - v0) / plotW, h = laneH(l), rows = laneRows(l);
    var binW = span / Math.max(1, (l.busy || []).length), mode;
    g.fillStyle = col;
    var hasEv = l.E || l.ev;
    var E = null, i0 = 0, i1 = 0;
    /* the whole run is drawn from the bins: the first paint decodes nothing */
    var whole = v1 - v0 >= span * 0.999;
    if (hasEv && !(l.busy && l.busy.length && (binW <= per || whole))) E = events(l);
    if (E) {
      i1 = lowerBound(E.start, E.n, v1);
      i0 = lowerBound(E.maxEnd, E.n, v0 + 1e-9);
      mode = (i1 - i0 > 4 * plotW && span / FINE <= per) ? "fine" : "events";
    } else mode = l.busy && l.busy.length ? "bins" : "none";
    stats.lod[l.idx] = mode;
    if (mode === "bins" || mode === "fine") {
      var b = mode === "fine" ? fineBins(l) : l.busy, nb = b.length, bw = span / nb;
      var mb = mode === "fine" ? l.fineMax : maxBusy[l.idx];
      for (var px = 0; px < plotW; px++) {
        var ta = v0 + px * per, tb = ta + per;
        var j0 = Math.floor(ta / bw), j1 = Math.min(nb - 1, Math.floor((tb - 1e-9) / bw));
        if (j1 < 0 || j0 >= nb) continue;
        var m = 0;
        for (var j = Math.max(0, j0); j <= j1; j++) if (b[j] > m) m = b[j];
        if (m <= 0) continue;
        var bh = Math.max(1, Math.min(1, m / mb) * (h - 4));
        g.fillRect(LABEL + px, y + h - 2 - bh, 1, bh);
      }
      if (mode === "bins") drawSpans(g, l, y, per);
      return;
    }
    if (mode === "none") return;
    var last = new Float64Array(rows).fill(-1), sample = l.kind === "CPU samples";
    g.font = "10px sans-serif";
    for (var k = i0; k < i1; k++) {
      var a = E.start[k], d = E.dur[k];
      if (a + d < v0) continue;
      var row = Math.min(rows - 1, E.depth ? E.depth[k] : 0), yy = y + 2 + row * SUB;
      var xa = (a - v0) / per, xw = d / per;
      if (xa < 0) { xw += xa; xa = 0; }
      if (xa + xw > plotW) xw = plotW - xa;
      if (xw < 1) {   /* narrower than a pixel: one mark per pixel column and row */
        var pxc = Math.floor(xa);
        if (last[row] === pxc) continue;
        last[row] = pxc;
        g.fillStyle = col;
        g.fillRect(LABEL + pxc, sample ? y + 2 : yy, 1, sample ? h - 4 : SUB - 1);
        stats.events_drawn++;
        continue;
      }
      last[row] = Math.floor(xa + xw);
      var isPicked = picked && picked[0] === l.idx && picked[1] === k;
      g.fillStyle = isPicked ? "#c026d3" : col;
      g.fillRect(LABEL + xa, yy, xw, SUB - 1);
      if (xw > 3) {
        g.strokeStyle = "#fff"; g.strokeRect(LABEL + xa + 0.5, yy + 0.5, xw - 1, SUB - 2);
      }
      if (xw > 40) {
        g.fillStyle = "#fff";
        g.save(); g.beginPath(); g.rect(LABEL + xa, yy, xw - 2, SUB); g.clip();
        g.fillText(names[E.name[k]] || "", LABEL + xa + 3, yy + 10); g.restore();
      }
      stats.events_drawn++;
    }
  }
  /* lanes without events (over the budget): their longest spans on top of the bins */
  function drawSpans(g, l, y, per) {
    if (l.E || l.ev) return;
    var sp = l.spans || [], h = laneH(l);
    g.font = "10px sans-serif";
    for (var j = 0; j + 2 < sp.length; j += 3) {
      var s0 = sp[j], d = sp[j + 1];
      if (s0 + d < v0 || s0 > v1) continue;
      var xa = (s0 - v0) / per, xw = d / per;
      if (xw < 2) continue;
      if (xa < 0) { xw += xa; xa = 0; }
      g.globalAlpha = 0.85; g.fillStyle = colorOf[l.kind];
      g.fillRect(LABEL + xa, y + 2, xw, h - 4); g.globalAlpha = 1;
      if (xw > 40) {
        g.fillStyle = "#fff"; g.save(); g.beginPath(); g.rect(LABEL + xa, y, xw - 2, h); g.clip();
        g.fillText(names[sp[j + 2]] || "", LABEL + xa + 3, y + 13); g.restore();
      }
    }
  }
  function groupTitle(g) {
    var procs = D.overview.processes || [];
    if (g.p < 0 || !procs[g.p]) return (g.collapsed ? "▸ " : "▾ ") + (g.title || "process");
    return (g.collapsed ? "▸ " : "▾ ") + procLabel(procs[g.p]) + "  " +
      (procs[g.p].command || "").slice(0, 80) +
      (g.collapsed ? "  (" + g.lanes.length + " lanes)" : "");
  }
  function draw() {
    W = Math.max(400, box.clientWidth || 900);
    var g = setupCanvas(cv, W, H), plotW = W - LABEL - 8;
    stats.events_drawn = 0; stats.flows_drawn = 0; stats.lanes_drawn = 0; stats.lod = {};
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    g.fillStyle = "#667085"; g.font = "11px sans-serif"; g.strokeStyle = "#e3e6ec";
    for (var k = 0; k <= 8; k++) {
      var x = LABEL + plotW * k / 8;
      g.beginPath(); g.moveTo(x + 0.5, AXIS - 4); g.lineTo(x + 0.5, H); g.stroke();
      g.fillText("+" + fmtNs(v0 + (v1 - v0) * k / 8), Math.min(x + 2, W - 70), 12);
    }
    if (sel) {
      var sa = LABEL + (sel.t0 - v0) / ((v1 - v0) / plotW);
      var sb = LABEL + (sel.t1 - v0) / ((v1 - v0) / plotW);
      g.fillStyle = "rgba(43,108,176,0.10)";
      g.fillRect(Math.max(LABEL, sa), AXIS, Math.min(W - 8, sb) - Math.max(LABEL, sa), H - AXIS);
    }
    laneY = {};
    layout.forEach(function (r) {
      if (r.g != null) {
        g.fillStyle = "#eef1f6"; g.fillRect(0, r.y, W, r.h);
        g.fillStyle = "#1d2330"; g.font = "bold 11px sans-serif";
        g.fillText(groupTitle(groups[r.g]), 4, r.y + 13);
        return;
      }
      var l = lanes[r.lane], inSel = sel && sel.lanes.indexOf(r.lane) >= 0;
      laneY[r.lane] = r.y;
      if (inSel) { g.fillStyle = "rgba(43,108,176,0.08)"; g.fillRect(0, r.y, LABEL - 6, r.h); }
      g.fillStyle = "#1d2330"; g.font = "11px sans-serif";
      g.save(); g.beginPath(); g.rect(0, r.y, LABEL - 6, r.h); g.clip();
      g.fillText(l.label, 10, r.y + 13); g.restore();
      g.save(); g.beginPath(); g.rect(LABEL, r.y, plotW, r.h); g.clip();
      drawLane(g, l, r.y, plotW);
      g.restore();
      g.strokeStyle = "#f0f1f4"; g.beginPath();
      g.moveTo(0, r.y + r.h - 0.5); g.lineTo(W, r.y + r.h - 0.5); g.stroke();
      stats.lanes_drawn++;
    });
    g.save(); g.beginPath(); g.rect(LABEL, AXIS, plotW, H - AXIS); g.clip();
    drawFlows(g, plotW);
    g.restore();
    label.textContent = "showing " + fmtNs(v1 - v0) + " from +" + fmtNs(v0) +
      (selMode ? " · select mode: drag to select" : "");
    CHECK.timeline_lanes = lanes.length;
  }
  /* flows: MPI messages in the window, and launch -> kernel of the visible GPU events (when few
   * enough) or of the picked event */
  function drawFlows(g, plotW) {
    var F = T.flows || [];
    for (var i = 0; i + 3 < F.length; i += 4) {
      var a = evBox(F[i], F[i + 1], plotW), b = evBox(F[i + 2], F[i + 3], plotW);
      if (!a || !b || (a.x1 < LABEL && b.x0 < LABEL) || (a.x1 > W && b.x0 > W)) continue;
      arrow(g, a, b, "#b42318");
    }
    var visible = [];
    layout.forEach(function (r) {
      if (r.lane == null || stats.lod[r.lane] !== "events") return;
      var l = lanes[r.lane];
      if (!/^GPU/.test(l.kind) || !l.E || !l.E.corr) return;
      var E = l.E, k1 = lowerBound(E.start, E.n, v1), k0 = lowerBound(E.maxEnd, E.n, v0);
      for (var k = k0; k < k1 && visible.length <= 500; k++) visible.push([r.lane, k]);
    });
    if (visible.length > 500) visible = [];
    if (picked && /^GPU/.test(lanes[picked[0]].kind)) visible.push(picked);
    visible.forEach(function (v) {
      var l = lanes[v[0]], c = l.E.corr ? l.E.corr[v[1]] : 0, src = c ? launchOf(l.p, c) : null;
      if (!src) return;
      var a = evBox(src[0], src[1], plotW), b = evBox(v[0], v[1], plotW);
      if (a && b) arrow(g, a, b, "#2b6cb0");
    });
    if (picked && !/^GPU/.test(lanes[picked[0]].kind)) {
      var pl = lanes[picked[0]], pc = pl.E && pl.E.corr ? pl.E.corr[picked[1]] : 0;
      if (pc) gpuOf(pl.p, pc).forEach(function (d) {
        var a = evBox(picked[0], picked[1], plotW), b = evBox(d[0], d[1], plotW);
        if (a && b) arrow(g, a, b, "#2b6cb0");
      });
    }
  }
  function clampView() {
    var w = Math.max(50, Math.min(span, v1 - v0));
    v0 = Math.max(0, Math.min(span - w, v0)); v1 = v0 + w;
  }
  function zoom(f, at) {
    var a = at == null ? 0.5 : at, c = v0 + (v1 - v0) * a, w = (v1 - v0) * f;
    v0 = c - w * a; v1 = v0 + w; clampView(); draw();
  }
  function zoomTo(t0, t1) { v0 = t0; v1 = t1; clampView(); draw(); }
  function rowAt(py) {
    for (var i = 0; i < layout.length; i++)
      if (py >= layout[i].y && py < layout[i].y + layout[i].h) return layout[i];
    return null;
  }
  /* the event under (px, py) of a lane in event mode */
  function eventAt(r, px, py) {
    var l = lanes[r.lane], plotW = W - LABEL - 8, per = (v1 - v0) / plotW;
    if (stats.lod[r.lane] !== "events") return -1;
    var E = events(l), t = v0 + (px - LABEL) * per, slack = 2 * per;
    var row = Math.floor((py - r.y - 2) / SUB), best = -1;
    var k1 = lowerBound(E.start, E.n, t + slack), k0 = lowerBound(E.maxEnd, E.n, t - slack);
    for (var k = k0; k < k1; k++) {
      var rk = Math.min(laneRows(l) - 1, E.depth ? E.depth[k] : 0);
      if (l.kind !== "CPU samples" && rk !== row) continue;
      if (E.start[k] - slack <= t && t <= E.start[k] + E.dur[k] + slack) best = k;
    }
    return best;
  }
  function eventText(li, k) {
    var l = lanes[li], E = events(l), txt = (l.kind === "CPU samples" ? "CPU sample" :
      (names[E.name[k]] || "")) + "\n" + l.label + "\nstart +" + fmtNs(E.start[k]);
    if (l.kind !== "CPU samples") txt += ", duration " + fmtNs(E.dur[k]);
    if (E.bytes && E.bytes[k]) {
      txt += "\n" + fmtBytes(E.bytes[k]);
      if (E.dur[k] > 0) txt += " at " + fmtBytes(E.bytes[k] / (E.dur[k] / 1e9)) + "/s";
    }
    if (E.corr && E.corr[k]) txt += "\ncorrelation id " + E.corr[k];
    return txt;
  }
  function pick(li, k) {
    picked = k >= 0 ? [li, k] : null;
    details.textContent = picked ? "Selected: " + eventText(li, k).replace(/\n/g, " · ") : "";
    var l = lanes[li];
    if (picked && l.E && l.E.corr && l.E.corr[k]) {
      var c = l.E.corr[k], gpu = /^GPU/.test(l.kind);
      var other = gpu ? [launchOf(l.p, c)].filter(Boolean) : gpuOf(l.p, c);
      if (other.length) details.textContent += " · flow " + (gpu ? "from " : "to ") +
        other.map(function (o) {
          return names[lanes[o[0]].E.name[o[1]]] + " (" + lanes[o[0]].label + ")";
        }).join(", ");
    }
    var F = T.flows || [];
    for (var i = 0; picked && i + 3 < F.length; i += 4) {
      if (F[i] === li && F[i + 1] === k)
        details.textContent += " · message to " + lanes[F[i + 2]].label;
      if (F[i + 2] === li && F[i + 3] === k)
        details.textContent += " · message from " + lanes[F[i]].label;
    }
    draw();
  }
  /* the selection: [t0, t1] over some lanes; its statistics per name and per lane */
  function select(t0, t1, laneList) {
    if (t1 < t0) { var x = t0; t0 = t1; t1 = x; }
    sel = { t0: Math.max(0, t0), t1: Math.min(span, t1), lanes: laneList.slice() };
    var byName = {}, perLane = [], dt = Math.max(1, sel.t1 - sel.t0), total = 0;
    sel.lanes.forEach(function (li) {
      var l = lanes[li], busy = 0, cnt = 0, E = events(l);
      if (E) {
        var k1 = lowerBound(E.start, E.n, sel.t1), k0 = lowerBound(E.maxEnd, E.n, sel.t0);
        for (var k = k0; k < k1; k++) {
          var a = E.start[k], b = a + E.dur[k];
          if (b < sel.t0 && !(E.dur[k] === 0 && a >= sel.t0)) continue;
          var ov = Math.max(0, Math.min(b, sel.t1) - Math.max(a, sel.t0));
          var key = l.kind === "CPU samples" ? "(CPU samples)" : names[E.name[k]] || "";
          var r = byName[key + "\u0000" + l.kind] || (byName[key + "\u0000" + l.kind] =
            { name: key, kind: l.kind, count: 0, time: 0, bytes: 0, busy: 0 });
          r.count++; r.time += ov; r.busy += E.dur[k];
          if (E.bytes && E.bytes[k]) r.bytes += E.bytes[k] * (E.dur[k] > 0 ? ov / E.dur[k] : 1);
          cnt++;
          if (!E.depth || E.depth[k] === 0) busy += ov;
        }
      } else if (l.busy && l.busy.length) {  /* over the budget: from the bins */
        var bw = span / l.busy.length;
        for (var j = Math.floor(sel.t0 / bw); j < l.busy.length && j * bw < sel.t1; j++) {
          var lo = Math.max(j * bw, sel.t0), hi = Math.min((j + 1) * bw, sel.t1);
          if (hi > lo && l.kind !== "CPU samples") busy += l.busy[j] / 1000 * (hi - lo);
        }
      }
      total += cnt;
      perLane.push({ lane: l.label, kind: l.kind, events: cnt, busy: busy, share: 100 * busy / dt,
                     detail: E ? "events" : "bins" });
    });
    var rows = Object.keys(byName).map(function (k) {
      var r = byName[k];
      r.avg = r.count ? r.busy / r.count : 0;
      r.bw = r.bytes && r.time > 0 ? r.bytes / (r.time / 1e9) : 0;
      return r;
    });
    sel.stats = { events: total, names: rows.length, duration: dt, by_name: rows,
                  by_lane: perLane };
    selBox.textContent = "";
    selBox.appendChild(el("h3", { text: "Selection: " + fmtNs(dt) + " from +" + fmtNs(sel.t0) +
      ", " +
      sel.lanes.length + " lanes, " + fmtInt(total) + " events" }));
    dataTable(selBox, [
      { key: "name", title: "name" }, { key: "kind", title: "lane kind", mono: false },
      { key: "count", title: "events", num: true, fmt: fmtInt },
      { key: "time", title: "time in selection", num: true, fmt: fmtNs, bar: "time" },
      { key: "avg", title: "average duration", num: true, fmt: fmtNs },
      { key: "bytes", title: "bytes", num: true,
        fmt: function (v) { return v ? fmtBytes(v) : ""; } },
      { key: "bw", title: "bandwidth", num: true,
        fmt: function (v) { return v ? fmtBytes(v) + "/s" : ""; } }
    ], rows, { sort: "time", limit: 50 });
    dataTable(selBox, [
      { key: "lane", title: "lane" }, { key: "events", title: "events", num: true, fmt: fmtInt },
      { key: "busy", title: "busy", num: true, fmt: fmtNs },
      { key: "share", title: "busy %", num: true, fmt: fmtPct, bar: "share" },
      { key: "detail", title: "from", mono: false }
    ], perLane, { sort: "busy", limit: 50 });
    draw();
    return sel.stats;
  }
  function toggle(gi) { groups[gi].collapsed = !groups[gi].collapsed; doLayout(); draw(); }
  bIn.addEventListener("click", function () { zoom(0.5); });
  bOut.addEventListener("click", function () { zoom(2); });
  bReset.addEventListener("click", function () { v0 = 0; v1 = span; draw(); });
  bSel.addEventListener("click", function () {
    selMode = !selMode; bSel.className = selMode ? "active" : ""; draw();
  });
  bZoomSel.addEventListener("click", function () { if (sel) zoomTo(sel.t0, sel.t1); });
  cv.addEventListener("dblclick", function () { v0 = 0; v1 = span; draw(); });
  function xy(e) {
    var r = cv.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }
  cv.addEventListener("wheel", function (e) {
    var p = xy(e), plotW = W - LABEL - 8, at = Math.min(1, Math.max(0, (p[0] - LABEL) / plotW));
    e.preventDefault();
    zoom(e.deltaY < 0 ? 0.8 : 1.25, at);
  }, { passive: false });
  var drag = null;
  cv.addEventListener("mousedown", function (e) {
    var p = xy(e);
    drag = { x: e.clientX, px: p[0], py: p[1], v0: v0, v1: v1, sel: e.shiftKey || selMode,
             moved: false };
  });
  window.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var d = drag, p = xy(e), plotW = W - LABEL - 8, per = (v1 - v0) / plotW;
    drag = null;
    if (d.sel && d.moved) {
      var ya = Math.min(d.py, p[1]), yb = Math.max(d.py, p[1]), ls = [];
      layout.forEach(function (r) {
        if (r.lane != null && r.y + r.h > ya && r.y < yb) ls.push(r.lane);
      });
      if (!ls.length) layout.forEach(function (r) { if (r.lane != null) ls.push(r.lane); });
      select(v0 + (Math.max(LABEL, d.px) - LABEL) * per,
             v0 + (Math.max(LABEL, p[0]) - LABEL) * per, ls);
      return;
    }
    if (d.moved) return;
    var r = rowAt(p[1]);   /* a click */
    if (!r) return;
    if (r.g != null) { toggle(r.g); return; }
    if (p[0] >= LABEL) pick(r.lane, eventAt(r, p[0], p[1]));
  });
  cv.addEventListener("mousemove", function (e) {
    var p = xy(e), plotW = W - LABEL - 8, per = (v1 - v0) / plotW;
    if (drag) {
      if (Math.abs(e.clientX - drag.x) > 2 || Math.abs(p[1] - drag.py) > 2) drag.moved = true;
      if (drag.sel || !drag.moved) return;
      var w = drag.v1 - drag.v0;
      v0 = Math.max(0, Math.min(span - w, drag.v0 + (drag.x - e.clientX) * per)); v1 = v0 + w;
      draw(); hideTip(); return;
    }
    var r = rowAt(p[1]), x = p[0] - LABEL;
    if (!r || x < 0 || r.g != null) { hideTip(); return; }
    var l = lanes[r.lane], t = v0 + x * per, k = eventAt(r, p[0], p[1]);
    if (k >= 0) { showTip(e, eventText(r.lane, k)); return; }
    var txt = l.label + " · " + l.kind + "\nat +" + fmtNs(t), b = l.busy || [];
    var bw = span / Math.max(1, b.length);
    var bi = Math.floor(t / bw);
    if (bi >= 0 && bi < b.length)
      txt += l.kind === "CPU samples" ? "\n" + b[bi] + " samples in " + fmtNs(bw)
                                      : "\nbusy " + (b[bi] / 10).toFixed(1) + " % of " + fmtNs(bw);
    showTip(e, txt);
  });
  cv.addEventListener("mouseleave", hideTip);
  window.addEventListener("resize", draw);
  draw();
  chartDrawn(cv);
  CHECK.timeline_events = nEvents;
  CHECK.timeline_tracks = extra.length;
  window.OP_TIMELINE = {
    canvas: cv, label: LABEL, axis: AXIS,
    state: function () {
      return { v0: v0, v1: v1, span: span, width: W, lanes: lanes.length, events: nEvents,
               lod: stats.lod, events_drawn: stats.events_drawn, flows_drawn: stats.flows_drawn,
               lanes_drawn: stats.lanes_drawn, picked: picked, details: details.textContent,
               collapsed: groups.map(function (g) { return g.collapsed; }),
               groups: groups.map(function (g) {
                 return { p: g.p, title: g.title || null, lanes: g.lanes };
               }),
               labels: lanes.map(function (l) { return [l.p, l.label, l.kind]; }),
               layout: layout,
               selection: sel ? { t0: sel.t0, t1: sel.t1, lanes: sel.lanes, stats: sel.stats }
                              : null };
    },
    zoomTo: zoomTo, select: select, toggle: toggle, pick: pick,
    events: function (li) { return events(lanes[li]); }
  };
}

/* ---- flame graph (icicle) -----------------------------------------------------------------
 * nodes: flat [name, parent, self, total] in depth-first order (parents first, children by
 * total). Click a frame to zoom into it, click an ancestor row (or reset) to zoom out;
 * search highlights matching frames and says which share of the samples they hold. */
function buildFlame(F) {
  var n = F.nodes.length / 4, name = new Int32Array(n), parent = new Int32Array(n), total = new Float64Array(n),
      self = new Float64Array(n), depth = new Int32Array(n), x = new Float64Array(n), next = new Float64Array(n);
  var maxDepth = 0;
  for (var i = 0; i < n; i++) {
    name[i] = F.nodes[4 * i]; parent[i] = F.nodes[4 * i + 1]; self[i] = F.nodes[4 * i + 2]; total[i] = F.nodes[4 * i + 3];
    if (i === 0) { depth[i] = 0; x[i] = 0; next[i] = 0; continue; }
    var p = parent[i];
    depth[i] = depth[p] + 1;
    x[i] = x[p] + next[p];  /* children follow each other left to right inside the parent */
    next[p] += total[i];
    next[i] = 0;
    if (depth[i] > maxDepth) maxDepth = depth[i];
  }
  return { n: n, name: name, parent: parent, total: total, self: self, depth: depth, x: x, maxDepth: maxDepth, names: F.names };
}
function renderFlame(parent, F, flat) {
  var T = buildFlame(F), root = 0, query = "", RH = 17;
  var tools = el("div", { cls: "tools" });
  var search = el("input", { type: "search", placeholder: "search functions (regex)…" });
  var reset = el("button", { text: "reset zoom" }), info = el("span", { cls: "note" });
  tools.appendChild(search); tools.appendChild(reset); tools.appendChild(info);
  parent.appendChild(tools);
  var box = el("div", { cls: "chartbox" }), cv = el("canvas");
  box.appendChild(cv); parent.appendChild(box);
  var W = 0, H = (T.maxDepth + 1) * RH + 4;
  function inSub(i, r) { while (i > 0 && i !== r) i = T.parent[i]; return i === r; }
  var re = null;
  function matches(i) {
    var nm = T.names[T.name[i]];
    return re ? re.test(nm) : nm.indexOf(query) >= 0;
  }
  var hit = null;
  function draw() {
    W = Math.max(400, box.clientWidth || 800);
    var g = setupCanvas(cv, W, H);
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    var rx = T.x[root], rt = Math.max(1, T.total[root]), sc = W / rt, matched = 0;
    try { re = query ? new RegExp(query, "i") : null; } catch (e) { re = null; }
    hit = [];
    var anc = {};
    for (var a = root; ; a = T.parent[a]) { anc[a] = 1; if (a === 0) break; }
    g.font = "11px sans-serif";
    var drawn = 0, mset = query ? new Uint8Array(T.n) : null;
    for (var i = 0; i < T.n; i++) {
      var xx, ww;
      if (anc[i]) { xx = 0; ww = W; }
      else {
        if (T.x[i] + T.total[i] <= rx || T.x[i] >= rx + rt || T.depth[i] <= T.depth[root]) continue;
        ww = T.total[i] * sc;
        if (ww < 0.4) continue;
        xx = (T.x[i] - rx) * sc;
        if (!inSub(i, root)) continue;
      }
      var y = T.depth[i] * RH, nm = T.names[T.name[i]], m = mset && matches(i);
      if (m) {
        mset[i] = 1;
        if (!mset[T.parent[i]] || i === 0) matched += T.total[i]; /* outermost matches only */
      } else if (mset && mset[T.parent[i]] && i !== 0) mset[i] = 1;
      g.fillStyle = anc[i] && i !== root ? "#d9dde5" : (i === 0 ? "#c9d3e6" : (m ? "#c026d3" : hashColor(nm)));
      if (query && !m && !anc[i] && !(mset && mset[i])) g.globalAlpha = 0.45;
      g.fillRect(xx, y, Math.max(0.5, ww - 0.5), RH - 1);
      g.globalAlpha = 1;
      if (ww > 30) {
        g.fillStyle = m ? "#fff" : "#1d2330";
        g.save(); g.beginPath(); g.rect(xx, y, ww - 2, RH); g.clip();
        g.fillText(nm, xx + 3, y + 12); g.restore();
      }
      hit.push([xx, y, ww, i]);
      drawn++;
    }
    CHECK.flame_nodes = Math.max(CHECK.flame_nodes, drawn);
    var tot = Math.max(1, T.total[0]);
    info.textContent = fmtInt(T.total[0]) + " samples, " + fmtInt(T.n) + " frames" +
      (F.pruned ? " (" + fmtInt(F.pruned) + " tiny frames left out)" : "") +
      (root ? " · zoomed into " + T.names[T.name[root]] : "") +
      (query ? " · '" + query + "' matches " + fmtPct(100 * matched / tot) + " of the samples" : "");
  }
  function at(e) {
    var r = cv.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
    for (var k = hit.length - 1; k >= 0; k--) {
      var h = hit[k];
      if (px >= h[0] && px <= h[0] + h[2] && py >= h[1] && py < h[1] + RH) return h[3];
    }
    return -1;
  }
  cv.addEventListener("click", function (e) { var i = at(e); if (i >= 0) { root = i; draw(); } });
  cv.addEventListener("mousemove", function (e) {
    var i = at(e);
    if (i < 0) { hideTip(); return; }
    var tot = Math.max(1, T.total[0]);
    showTip(e, T.names[T.name[i]] + "\n" + fmtInt(T.total[i]) + " samples (" + fmtPct(100 * T.total[i] / tot) + "), self " +
      fmtInt(T.self[i]) + " (" + fmtPct(100 * T.self[i] / tot) + ")");
  });
  cv.addEventListener("mouseleave", hideTip);
  reset.addEventListener("click", function () { root = 0; draw(); });
  search.addEventListener("input", function () { query = search.value; draw(); });
  window.addEventListener("resize", draw);
  draw();
  chartDrawn(cv);
  return { search: function (q) { search.value = q; query = q; draw(); return info.textContent; },
           zoom: function (i) { root = i; draw(); },
           state: function () {
             return { total: T.total[0], frames: T.n, root: T.names[T.name[0]] };
           } };
}
/* The flame graph per rank and per thread: D.flame_split holds the samples under a frame per
 * process (depth 1) and per thread (depth 2); a view is the subtree of one such frame, a
 * process's threads merged (same call path, same frame). */
function flameViews(S) {
  var out = [];
  if (!S || !S.nodes || !S.nodes.length) return out;
  var n = S.nodes.length / 4, depth = new Int32Array(n);
  for (var i = 1; i < n; i++) {
    depth[i] = depth[S.nodes[4 * i + 1]] + 1;
    if (depth[i] === 1) out.push({ node: i, merge: true, label: S.names[S.nodes[4 * i]] });
    else if (depth[i] === 2)
      out.push({ node: i, merge: false,
                 label: S.names[S.nodes[4 * S.nodes[4 * i + 1]]] + " · " +
                        S.names[S.nodes[4 * i]] });
  }
  return out;
}
function flameOf(S, view) {
  var n = S.nodes.length / 4, kids = [], T = [], names = S.names.slice(), i;
  for (i = 0; i < n; i++) kids.push([]);
  for (i = 1; i < n; i++) kids[S.nodes[4 * i + 1]].push(i);
  T.push({ name: names.length, self: 0, total: S.nodes[4 * view.node + 3], kids: {}, list: [] });
  names.push(view.label);
  function add(src, parent) {
    var nm = S.nodes[4 * src], c = T[parent].kids[nm];
    if (c == null) {
      c = T.length; T[parent].kids[nm] = c; T[parent].list.push(c);
      T.push({ name: nm, self: 0, total: 0, kids: {}, list: [] });
    }
    T[c].self += S.nodes[4 * src + 2]; T[c].total += S.nodes[4 * src + 3];
    kids[src].forEach(function (k) { add(k, c); });
  }
  kids[view.node].forEach(function (k) {
    if (view.merge) kids[k].forEach(function (g) { add(g, 0); }); else add(k, 0);
  });
  var nodes = [];
  function emit(t, parent) {
    var at = nodes.length / 4;
    nodes.push(t.name, parent, t.self, t.total);
    t.list.sort(function (a, b) { return T[b].total - T[a].total; });
    t.list.forEach(function (c) { emit(T[c], at); });
  }
  emit(T[0], 0);
  return { total: T[0].total, pruned: 0, names: names, nodes: nodes };
}
var FLAME = null;
function renderCpuProfile() {
  var F = D.flame;
  if (!F || !F.nodes || F.nodes.length < 8) return;
  var s = section("cpu", "CPU profile");
  s.appendChild(el("p", { cls: "note", text: "Call-stack samples as an icicle flame graph (callers on top, callees below; width = samples). " +
    "Click a frame to zoom, search to highlight. The flat profile lists functions by their own (self) samples." }));
  var split = el("div", { cls: "split" }), left = el("div"), right = el("div");
  split.appendChild(left); split.appendChild(right); s.appendChild(split);
  var views = flameViews(D.flame_split), holder = el("div");
  if (views.length > 1) {
    var pickView = el("select", { id: "flame-view" });
    pickView.appendChild(el("option", { value: "-1", text: "all processes and threads" }));
    views.forEach(function (v, i) {
      pickView.appendChild(el("option", { value: String(i), text: v.label }));
    });
    pickView.addEventListener("change", function () {
      var i = +pickView.value;
      holder.textContent = "";
      FLAME = renderFlame(holder, i < 0 ? F : flameOf(D.flame_split, views[i]));
    });
    left.appendChild(el("div", { cls: "tools" },
                        [el("span", { cls: "note", text: "flame graph of" }), pickView]));
  }
  var FC = D.flame_counters || {}, weights = Object.keys(FC);
  if (weights.length) {  /* the flame graph weighted by a perf_event counter of the samples */
    var pickWeight = el("select", { id: "flame-weight" });
    pickWeight.appendChild(el("option", { value: "", text: "samples" }));
    weights.forEach(function (w) { pickWeight.appendChild(el("option", { value: w, text: w })); });
    pickWeight.addEventListener("change", function () {
      holder.textContent = "";
      FLAME = renderFlame(holder, pickWeight.value ? FC[pickWeight.value] : F);
    });
    left.appendChild(el("div", { cls: "tools" },
                        [el("span", { cls: "note", text: "width =" }), pickWeight]));
  }
  left.appendChild(holder);
  CHECK.flame_views = views.length;
  CHECK.flame_weights = weights.length;
  FLAME = renderFlame(holder, F);
  right.appendChild(el("h3", { text: "Flat profile" }));
  var tot = Math.max(1, F.total);
  right.appendChild(el("p", { cls: "note", text: "Samples in the function itself (self) and in it or its callees (total); under each name its hottest line and its module." }));
  dataTable(right, [
    { key: "function", title: "function", sub: "where" },
    { key: "self", title: "self", num: true, fmt: function (v) { return fmtPct(100 * v / tot); }, bar: "self", barTitle: "self samples" },
    { key: "total", title: "total", num: true, fmt: function (v) { return fmtPct(100 * v / tot); } }
  ], (D.flat || []).map(function (r) {
    var loc = r[3] ? r[3].replace(/^.*\//, "") : "";
    return { function: r[0], self: r[1], total: r[2], where: [loc, r[4]].filter(Boolean).join(" · ") };
  }), { sort: "self", limit: 100 });
  renderCpuCounters(s);
}

/* The samples' perf_event counters per function (D.cpu_counters; absent when none recorded):
 * self and total counts of each counter and the ratios derived from them (IPC, miss rates). */
function renderCpuCounters(s) {
  var C = D.cpu_counters;
  CHECK.cpu_counters = 0;
  if (!C || !C.events || !C.events.length) return;
  s.appendChild(el("h3", { id: "cpu-counters", text: "Counters per function" }));
  s.appendChild(el("p", { cls: "note", text: "perf_event counters read by every sample: each sample weighs " +
    "its thread's increase since the previous sample. Totals: " + C.events.map(function (e) {
      return e.name + " " + fmtInt(e.total); }).join(", ") + "." +
    (C.ratios.length ? " Ratios of self counts: " + C.ratios.join(", ") + "." : "") }));
  var cols = [{ key: "function", title: "function", sub: "module" }];
  C.events.forEach(function (e, i) {
    cols.push({ key: "s" + i, title: e.name + " self", num: true, fmt: fmtInt, bar: i === 0 ? "s0" : undefined });
    cols.push({ key: "t" + i, title: e.name + " total", num: true, fmt: fmtInt });
  });
  C.ratios.forEach(function (r, k) {
    cols.push({ key: "r" + k, title: r, num: true, fmt: function (v) { return v == null ? "-" : fmtNum(v); } });
  });
  var rows = C.functions.map(function (f) {
    var o = { function: f.function, module: f.module };
    f.self.forEach(function (v, i) { o["s" + i] = v; o["t" + i] = f.total[i]; });
    f.ratios.forEach(function (v, k) { o["r" + k] = v; });
    return o;
  });
  CHECK.cpu_counters = rows.length;
  dataTable(s, cols, rows, { sort: "s0", limit: 100 });
}

/* ---- causal profile: program speedup against line speedup, one plot per line ------------- */
function renderCausal() {
  var C = D.causal;
  if (!C || !C.lines || !C.lines.length) return;
  var s = section("causal", "Causal profile");
  s.appendChild(el("p", { cls: "note", text: fmtInt(C.experiments) + " experiments. Each plot shows how much the program would speed up " +
    "(progress-point rate) if one line were sped up by the given amount; lines are ranked by the slope of that curve." }));
  var plots = el("div", { cls: "plots" });
  s.appendChild(plots);
  C.lines.slice(0, 12).forEach(function (L) {
    var p = el("div", { cls: "plot" }, [el("div", { cls: "title", text: L.line }),
      el("div", { cls: "note", text: L.progress_point + " (" + L.type + ") · slope " + fmtNum(L.slope) + " · max " + fmtPct(100 * L.max_speedup) })]);
    var W = 316, H = 190, m = { l: 40, r: 8, t: 8, b: 26 };
    var svg = svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H });
    var ys = L.points.map(function (q) { return q.program_speedup; });
    var lo = Math.min(-0.1, Math.min.apply(null, ys)), hi = Math.max(0.1, Math.max.apply(null, ys));
    function X(v) { return m.l + (W - m.l - m.r) * v; }
    function Y(v) { return m.t + (H - m.t - m.b) * (hi - v) / (hi - lo); }
    svg.appendChild(svgEl("line", { x1: X(0), x2: X(1), y1: Y(0), y2: Y(0), stroke: "#98a2b3" }));
    svg.appendChild(svgEl("line", { x1: X(0), x2: X(0), y1: Y(hi), y2: Y(lo), stroke: "#98a2b3" }));
    [0, 0.5, 1].forEach(function (v) {
      var t = svgEl("text", { x: X(v), y: H - 8, "font-size": 10, "text-anchor": "middle", fill: "#667085" });
      t.textContent = (v * 100) + "%"; svg.appendChild(t);
    });
    [lo, 0, hi].forEach(function (v) {
      var t = svgEl("text", { x: m.l - 4, y: Y(v) + 3, "font-size": 10, "text-anchor": "end", fill: "#667085" });
      t.textContent = Math.round(v * 100) + "%"; svg.appendChild(t);
    });
    var lx = Math.min(1, hi / Math.max(1e-9, L.slope));
    if (L.slope > 0) svg.appendChild(svgEl("line", { x1: X(0), y1: Y(0), x2: X(lx), y2: Y(L.slope * lx), stroke: "#f28e2b", "stroke-dasharray": "4 3" }));
    L.points.forEach(function (q) {
      var c = svgEl("circle", { cx: X(q.line_speedup), cy: Y(q.program_speedup), r: 3.5, fill: "#4e79a7" });
      var t = svgEl("title", {});
      t.textContent = "line +" + Math.round(q.line_speedup * 100) + "% → program " + fmtPct(100 * q.program_speedup) + " (" + q.experiments + " experiments)";
      c.appendChild(t); svg.appendChild(c);
      CHECK.causal_points++;
    });
    p.appendChild(svg);
    plots.appendChild(p);
    CHECK.charts++; CHECK.painted++;
  });
  s.appendChild(el("h3", { text: "Lines ranked" }));
  dataTable(s, [
    { key: "line", title: "line" }, { key: "point", title: "progress point" },
    { key: "slope", title: "slope", num: true, fmt: fmtNum, bar: "slope" },
    { key: "max", title: "max program speedup", num: true, fmt: function (v) { return fmtPct(100 * v); } },
    { key: "experiments", title: "experiments", num: true, fmt: fmtInt }
  ], C.lines.map(function (L) {
    return { line: L.line, point: L.progress_point + " (" + L.type + ")", slope: L.slope, max: L.max_speedup, experiments: L.experiments };
  }), { sort: "slope" });
}

/* ---- per-rank imbalance ------------------------------------------------------------------ */
function renderRanks() {
  var R = D.ranks;
  if (!R || !R.labels || R.labels.length < 2) return;
  var s = section("ranks", "Per-rank imbalance");
  s.appendChild(el("p", { cls: "note", text: R.labels.length + " processes. Time per domain and process, then the largest names with their spread over the processes " +
    "(imbalance = max / mean − 1: the time the slowest process costs the others at the next synchronization)." }));
  var legend = el("div", { cls: "legend" });
  R.domains.forEach(function (d, i) { legend.appendChild(el("span", {}, [el("i", { style: "background:" + PALETTE[i % PALETTE.length] }), d])); });
  s.appendChild(legend);
  var box = el("div", { cls: "chartbox" }), cv = el("canvas");
  box.appendChild(cv); s.appendChild(box);
  var LW = 230, BH = 16, n = R.labels.length, H = n * (BH + 4) + 24;
  function draw() {
    var W = Math.max(400, box.clientWidth || 800), g = setupCanvas(cv, W, H), max = 0;
    R.busy.forEach(function (row) { var t = row.reduce(function (a, b) { return a + b; }, 0); if (t > max) max = t; });
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    g.font = "11px sans-serif";
    R.busy.forEach(function (row, i) {
      var y = 4 + i * (BH + 4), x = LW;
      g.fillStyle = "#1d2330"; g.fillText(R.labels[i].slice(0, 36), 4, y + 12);
      row.forEach(function (v, d) {
        var w = max > 0 ? (W - LW - 90) * v / max : 0;
        g.fillStyle = PALETTE[d % PALETTE.length]; g.fillRect(x, y, w, BH); x += w;
      });
      g.fillStyle = "#667085"; g.fillText(fmtNs(row.reduce(function (a, b) { return a + b; }, 0)), x + 4, y + 12);
      CHECK.rank_bars++;
    });
  }
  draw();
  window.addEventListener("resize", draw);
  chartDrawn(cv);
  s.appendChild(el("h3", { text: "Largest names across processes" }));
  dataTable(s, [
    { key: "name", title: "name" }, { key: "domain", title: "domain", mono: false },
    { key: "min", title: "min", num: true, fmt: fmtNs }, { key: "mean", title: "mean", num: true, fmt: fmtNs },
    { key: "max", title: "max", num: true, fmt: fmtNs },
    { key: "slowest", title: "slowest", mono: false },
    { key: "imb", title: "imbalance", num: true, fmt: fmtPct, bar: "imb", barTitle: "imbalance" }
  ], R.top.map(function (t) {
    var mn = Infinity, mx = -Infinity, sum = 0, arg = 0;
    t.per_rank.forEach(function (v, i) { if (v < mn) mn = v; if (v > mx) { mx = v; arg = i; } sum += v; });
    var mean = sum / t.per_rank.length;
    return { name: t.name, domain: t.domain, min: mn, mean: mean, max: mx, slowest: R.labels[arg], imb: mean > 0 ? 100 * (mx / mean - 1) : 0 };
  }), { sort: "imb" });
}

/* ---- the full trace in Perfetto ---------------------------------------------------------- */
function renderPerfetto() {
  var s = section("perfetto", "Full trace in Perfetto");
  var ins = (D.inputs || []).map(function (p) { return "'" + p.replace(/'/g, "'\\''") + "'"; }).join(" ");
  s.appendChild(el("p", { text: "This page shows summaries. Every event is in the database; to browse them one by one, convert it to a Perfetto trace:" }));
  s.appendChild(el("pre", { cls: "cmd", text: "omniprof convert -i " + ins + " -f pftrace -d . -o trace\n# then open https://ui.perfetto.dev and drop ./trace_results.pftrace on it\n# (the trace stays on your machine: the Perfetto UI loads it in the browser)" }));
  (D.perfetto || []).forEach(function (p) { s.appendChild(el("p", { cls: "note", text: "Already converted beside an input: " + p })); });
  s.appendChild(el("p", { cls: "note", text: "Offline: trace_processor_shell or the Perfetto UI served locally (`tools/open_trace_in_ui` in the Perfetto sources) open the same file." }));
}

/* ---- main -------------------------------------------------------------------------------- */
function selfCheck(t0) {
  CHECK.errors = OP_ERRORS.slice();
  CHECK.render_ms = Math.round(performance.now() - t0);
  CHECK.load_ms = Math.round(performance.now());
  CHECK.layout = {};  /* where each section is (CSS px from the top): for screenshots of one part */
  CHECK.sections.forEach(function (id) {
    var e = document.getElementById(id), r = e.getBoundingClientRect();
    CHECK.layout[id] = [Math.round(r.top + window.scrollY), Math.round(r.height)];
  });
  CHECK.ok = CHECK.errors.length === 0 && CHECK.sections.indexOf("overview") >= 0 && CHECK.tables > 0 && CHECK.charts === CHECK.painted;
  var pre = document.getElementById("omniprof-selfcheck") || el("pre", { id: "omniprof-selfcheck" });
  pre.textContent = JSON.stringify(CHECK);
  document.body.appendChild(pre);
  document.body.setAttribute("data-selfcheck", CHECK.ok ? "ok" : "fail");
}
/* ---- findings (omniprof analyze, report_findings.c): what to fix, by predicted gain ---- */
function renderFindings() {
  var F = D.findings;
  if (!F) return;
  var s = section("findings", "What to fix");
  if (F.error) { s.appendChild(el("p", { cls: "note", text: "No analysis: " + F.error })); return; }
  s.appendChild(el("p", { cls: "note", text: "Ranked by the wall time the what-if engine " +
    "predicts fixing each would save (omniprof analyze; docs/analyze.md). Under 5 %: not worth fixing." }));
  var rows = (F.items || []).concat(F.not_worth_fixing || []);
  if (!rows.length)
    s.appendChild(el("p", { text: "Nothing to fix: no problem found would gain 5 % or more." }));
  rows.forEach(function (f) {
    s.appendChild(el("div", { cls: "finding" }, [
      el("div", { cls: "title", text: fmtPct(f.gain_pct) + " · " + f.title }),
      el("div", { cls: "note", text: f.evidence }),
      el("div", { text: "→ " + f.advice })]));
  });
  CHECK.findings = rows.length;
  /* per GPU and rank: communication beside computation, copies beside kernels (overlap.c) */
  var ov = F.gpu_overlap || [];
  if (!ov.length) return;
  var t = el("table", { cls: "data" }, [el("tr", null, ["GPU", "pid", "rank", "compute",
    "communication", "beside computation", "copies", "beside kernels"].map(function (h) {
      return el("th", { text: h }); }))]);
  ov.forEach(function (o) {
    t.appendChild(el("tr", null, [o.device, o.pid, o.rank < 0 ? "" : o.rank, fmtNs(o.compute_ns),
      fmtNs(o.communication_ns), fmtPct(o.comm_overlap_pct), fmtNs(o.copy_ns),
      fmtPct(o.copy_overlap_pct)].map(function (v) { return el("td", { text: String(v) }); })));
  });
  s.appendChild(el("h3", { text: "Overlap per GPU" }));
  s.appendChild(t);
}

function main() {
  var t0 = performance.now();
  MAIN = document.getElementById("main");
  NAV = document.getElementById("nav");
  try {
    D = JSON.parse(document.getElementById("omniprof-data").textContent);
    var procs = D.overview.processes || [];
    var cmd = procs.length && procs[0].command ? procs[0].command : (D.inputs || []).join(" ");
    document.getElementById("subtitle").textContent = cmd.slice(0, 160) + " · " + fmtNs(D.overview.duration_ns);
    CHECK.parse_ms = Math.round(performance.now() - t0);
    CHECK.step_ms = {};  /* how long each part took to draw */
    [["overview", renderOverview], ["findings", renderFindings], ["tables", renderTables], ["timeline", renderTimeline],
     ["cpu", renderCpuProfile], ["causal", renderCausal], ["ranks", renderRanks],
     ["counters", renderCounters], ["perfetto", renderPerfetto]].forEach(function (p) {
      var a = performance.now();
      p[1]();
      CHECK.step_ms[p[0]] = Math.round(performance.now() - a);
    });
  } catch (e) {
    OP_ERRORS.push("report: " + (e && e.stack ? e.stack : e));
    MAIN.appendChild(el("p", { cls: "warn", text: "The report could not be drawn: " + e }));
  }
  selfCheck(t0);
  /* a link to a section (report.html#cpu): the sections exist only now */
  var target = location.hash && document.getElementById(location.hash.slice(1));
  if (target) target.scrollIntoView();
}
/* Drawn now: everything it needs is above this script; the timeline's event columns come after
 * it (elements omniprof-ev-N), read when a lane first needs them, so that the first paint does
 * not wait for the browser to parse them. Once parsed, the self-check gets parsed_ms. */
main();
document.addEventListener("DOMContentLoaded", function () {
  CHECK.parsed_ms = Math.round(performance.now());
  var pre = document.getElementById("omniprof-selfcheck");
  if (pre) pre.textContent = JSON.stringify(CHECK);
});
