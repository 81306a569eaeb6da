/* flamegraph.js — the script inside `omniprof convert -f svg`'s flame graph (report_flame.c
 * embeds it with FLAME_W and FLAME_PAD defined before it): click a frame to zoom into it (its
 * callees fill the width, its callers stay below, faded), "Search" (or Ctrl-F) highlights the
 * frames whose name matches a regular expression and says which share of the samples they
 * hold, "Reset Zoom" (or Escape) goes back. Frames are <g class="f" data-x data-w data-d>
 * (x and width in px at full view, depth from the root) holding a <title> ("name (N samples,
 * P%)"), a <rect> and maybe a <text>. window.flame: the same actions and the state, for tests.
 * Plain ES5, no library, no network: the file stays self-contained. */
(function () {
  "use strict";
  var svg = document.documentElement, frames = [], zoomed = null, query = null;
  var plotW = FLAME_W - 2 * FLAME_PAD;
  function byId(id) { return document.getElementById(id); }
  function nameOf(g) {
    var t = g.getElementsByTagName("title")[0].textContent, k = t.lastIndexOf(" (");
    return k > 0 ? t.slice(0, k) : t;
  }
  function setText(f, x, w) {
    var fit = w > 12 ? Math.floor((w - 6) / 7) : 0, t = f.text;
    if (fit < 3) { if (t) t.textContent = ""; return; }
    if (!t) {
      t = f.text = document.createElementNS("http://www.w3.org/2000/svg", "text");
      t.setAttribute("y", +f.rect.getAttribute("y") + +f.rect.getAttribute("height") - 3);
      f.g.appendChild(t);
    }
    t.setAttribute("x", (x + 3).toFixed(1));
    t.textContent = f.name.length <= fit ? f.name : f.name.slice(0, fit - 2) + "..";
  }
  function place(f, x, w, faded) {
    f.g.style.display = w < 0.1 ? "none" : "";
    f.rect.setAttribute("x", x.toFixed(1));
    f.rect.setAttribute("width", Math.max(0.1, w > 0.5 ? w - 0.5 : w).toFixed(1));
    f.rect.setAttribute("fill-opacity", faded ? "0.5" : "1");
    setText(f, x, w);
  }
  function zoom(i) {
    var z = frames[i];
    if (!z) return;
    zoomed = i;
    var sc = plotW / Math.max(1e-9, z.w), eps = 1e-6;
    frames.forEach(function (f) {
      if (f.d >= z.d && f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps)
        place(f, FLAME_PAD + (f.x - z.x) * sc, f.w * sc, false);
      else if (f.d < z.d && f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps)
        place(f, FLAME_PAD, plotW, true);      /* a caller of the zoomed frame */
      else f.g.style.display = "none";
    });
    byId("reset").setAttribute("visibility", "visible");
    if (query) search(query);
  }
  function reset() {
    zoomed = null;
    frames.forEach(function (f) { place(f, FLAME_PAD + f.x, f.w, false); });
    byId("reset").setAttribute("visibility", "hidden");
    if (query) search(query);
  }
  /* highlights the matching frames; the share of samples held by the outermost ones */
  function search(q) {
    var re = null;
    query = q || null;
    try { re = query ? new RegExp(query) : null; } catch (e) { re = null; }
    var spans = [], n = 0;
    frames.forEach(function (f) {
      var m = re && re.test(f.name);
      f.rect.setAttribute("fill", m ? "rgb(230,0,230)" : f.fill);
      if (m) { n++; spans.push([f.x, f.x + f.w]); }
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end - 1e-6) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    var pct = 100 * covered / plotW;
    byId("matched").textContent =
      query ? "Matched: " + pct.toFixed(1) + "% (" + n + " frames)" : " ";
    byId("search").textContent = query ? "Clear search" : "Search";
    return pct;
  }
  function askSearch() {
    if (query) { search(null); return; }
    var q = window.prompt("Search for a function (regular expression):", "");
    if (q) search(q);
  }
  function frameOf(t) {  /* the frame (g.f) holding element t, or null */
    while (t && t !== svg && !(t.getAttribute && t.getAttribute("class") === "f")) t = t.parentNode;
    return t && t !== svg ? t : null;
  }
  function init() {
    var gs = svg.getElementsByTagName("g");
    for (var i = 0; i < gs.length; i++) {
      var g = gs[i];
      if (g.getAttribute("class") !== "f") continue;
      var r = g.getElementsByTagName("rect")[0];
      var f = { g: g, rect: r, text: g.getElementsByTagName("text")[0] || null, name: nameOf(g),
                x: +g.getAttribute("data-x"), w: +g.getAttribute("data-w"),
                d: +g.getAttribute("data-d"), fill: r.getAttribute("fill") };
      g.setAttribute("data-i", frames.length);
      g.style.cursor = "pointer";
      frames.push(f);
    }
    svg.addEventListener("click", function (e) {
      var t = e.target;
      t = frameOf(t);
      if (t) zoom(+t.getAttribute("data-i"));
    });
    svg.addEventListener("mouseover", function (e) {
      var t = e.target;
      t = frameOf(t);
      var d = byId("details");
      if (d) d.textContent = t ? t.getElementsByTagName("title")[0].textContent : " ";
    });
    byId("reset").addEventListener("click", function (e) { e.stopPropagation(); reset(); });
    byId("search").addEventListener("click", function (e) { e.stopPropagation(); askSearch(); });
    window.addEventListener("keydown", function (e) {
      if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.keyCode === 70)) {
        e.preventDefault();
        askSearch();
      } else if (e.key === "Escape") reset();
    });
  }
  init();
  window.flame = {
    zoom: zoom, reset: reset, search: search,
    state: function () {
      var shown = 0;
      frames.forEach(function (f) { if (f.g.style.display !== "none") shown++; });
      return { frames: frames.length, shown: shown,
               zoomed: zoomed === null ? null : frames[zoomed].name, query: query,
               matched: byId("matched").textContent };
    }
  };
})();
