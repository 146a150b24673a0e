// The graph view over window.PHLO_GRAPH (graph-data.js). It draws a selection, never the
// whole DAG unless asked ("Draw all"): the neighbourhood of a focused node (N hops up and
// down), or the nodes whose name contains the filter, at most MAX_DRAWN of them.
// `graph.html?focus=<name>&up=2&down=2` or `?filter=<text>` selects on load.
(function () {
  "use strict";
  var t0 = performance.now();
  var data = window.PHLO_GRAPH || { nodes: [], edges: [] };
  var nodes = data.nodes, edges = data.edges;
  var MAX_DRAWN = 300;
  var ups = nodes.map(function () { return []; });
  var downs = nodes.map(function () { return []; });
  edges.forEach(function (e) { downs[e[0]].push(e[1]); ups[e[1]].push(e[0]); });
  var byName = {};
  nodes.forEach(function (n, i) { if (!(n[0] in byName) || n[1] === "model") byName[n[0]] = i; });
  var el = function (id) { return document.getElementById(id); };
  var svg = el("graph"), status = el("status");
  var NS = "http://www.w3.org/2000/svg";

  var names = el("names");
  nodes.forEach(function (n) { var o = document.createElement("option"); o.value = n[0]; names.appendChild(o); });

  function walk(start, next, hops, into) {
    var frontier = [start], seen = {};
    seen[start] = true;
    for (var d = 0; d < hops && frontier.length; d++) {
      var nextFrontier = [];
      frontier.forEach(function (i) {
        next[i].forEach(function (j) { if (!seen[j]) { seen[j] = true; into[j] = true; nextFrontier.push(j); } });
      });
      frontier = nextFrontier;
    }
  }

  function select() {
    var focus = el("focus").value.trim(), filter = el("filter").value.trim().toLowerCase();
    var picked = {};
    if (focus && focus in byName) {
      var f = byName[focus];
      picked[f] = true;
      walk(f, ups, +el("up").value || 0, picked);
      walk(f, downs, +el("down").value || 0, picked);
      return { set: picked, focus: f, why: "the neighbourhood of " + focus };
    }
    if (filter) {
      nodes.forEach(function (n, i) { if (n[0].toLowerCase().indexOf(filter) >= 0) picked[i] = true; });
      return { set: picked, focus: -1, why: "names containing \u201c" + filter + "\u201d" };
    }
    return null;
  }

  function draw(sel, all) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var set = sel ? sel.set : {};
    if (all) { set = {}; nodes.forEach(function (_, i) { set[i] = true; }); }
    var ids = Object.keys(set).map(Number).sort(function (a, b) { return a - b; });
    if (!all && !sel) {
      status.textContent = nodes.length + " nodes: type a filter or choose a model to focus on (or Draw all).";
      if (nodes.length > MAX_DRAWN) return 0;
      nodes.forEach(function (_, i) { set[i] = true; });
      ids = nodes.map(function (_, i) { return i; });
    }
    if (!all && ids.length > MAX_DRAWN) {
      status.textContent = ids.length + " nodes match " + (sel ? sel.why : "") + ": more than " + MAX_DRAWN + "; refine it, focus on a model, or Draw all.";
      return 0;
    }
    // Layers: the longest path from a drawn node without drawn inputs.
    var layer = {}, order = [], indeg = {};
    ids.forEach(function (i) { indeg[i] = ups[i].filter(function (u) { return u in set; }).length; });
    var queue = ids.filter(function (i) { return indeg[i] === 0; });
    ids.forEach(function (i) { layer[i] = 0; });
    while (queue.length) {
      var i = queue.shift();
      order.push(i);
      downs[i].forEach(function (j) {
        if (!(j in set)) return;
        layer[j] = Math.max(layer[j], layer[i] + 1);
        if (--indeg[j] === 0) queue.push(j);
      });
    }
    var columns = [], pos = {};
    ids.forEach(function (i) { (columns[layer[i]] = columns[layer[i]] || []).push(i); });
    var W = 230, H = 26, GAPX = 60, GAPY = 8, maxRows = 0;
    columns.forEach(function (col, c) {
      col.sort(function (a, b) { return nodes[a][0] < nodes[b][0] ? -1 : 1; });
      col.forEach(function (i, r) { pos[i] = [10 + c * (W + GAPX), 10 + r * (H + GAPY)]; });
      maxRows = Math.max(maxRows, col.length);
    });
    svg.setAttribute("width", 20 + columns.length * (W + GAPX));
    svg.setAttribute("height", 20 + maxRows * (H + GAPY));
    var frag = document.createDocumentFragment();
    edges.forEach(function (e) {
      if (!(e[0] in set) || !(e[1] in set)) return;
      var a = pos[e[0]], b = pos[e[1]];
      var x1 = a[0] + W, y1 = a[1] + H / 2, x2 = b[0], y2 = b[1] + H / 2, mx = (x1 + x2) / 2;
      var p = document.createElementNS(NS, "path");
      p.setAttribute("d", "M" + x1 + "," + y1 + " C" + mx + "," + y1 + " " + mx + "," + y2 + " " + x2 + "," + y2);
      frag.appendChild(p);
    });
    ids.forEach(function (i) {
      var n = nodes[i], g = document.createElementNS(NS, "g");
      g.setAttribute("class", "node " + n[1] + (sel && sel.focus === i ? " focus" : ""));
      g.setAttribute("data-name", n[0]);
      var r = document.createElementNS(NS, "rect");
      r.setAttribute("x", pos[i][0]); r.setAttribute("y", pos[i][1]);
      r.setAttribute("width", W); r.setAttribute("height", H); r.setAttribute("rx", 4);
      var t = document.createElementNS(NS, "text");
      t.setAttribute("x", pos[i][0] + 6); t.setAttribute("y", pos[i][1] + 17);
      t.textContent = n[0] + " \u00b7 " + n[2];
      var title = document.createElementNS(NS, "title");
      title.textContent = n[0] + " (" + n[1] + ", " + n[2] + "): click to focus, double-click to open";
      g.appendChild(r); g.appendChild(t); g.appendChild(title);
      g.addEventListener("click", function () { el("focus").value = n[0]; el("filter").value = ""; draw(select(), false); });
      g.addEventListener("dblclick", function () { window.location.href = n[3]; });
      frag.appendChild(g);
    });
    svg.appendChild(frag);
    status.textContent = "Showing " + ids.length + " of " + nodes.length + " nodes" + (all ? " (all)" : sel ? ": " + sel.why : "") + ".";
    return ids.length;
  }

  el("apply").addEventListener("click", function () { draw(select(), false); });
  el("all").addEventListener("click", function () { draw(null, true); });
  el("filter").addEventListener("input", function () { el("focus").value = ""; draw(select(), false); });
  el("focus").addEventListener("change", function () { draw(select(), false); });

  var params = new URLSearchParams(window.location.search);
  ["focus", "filter", "up", "down"].forEach(function (k) { if (params.get(k) !== null) el(k).value = params.get(k); });
  var drawn = draw(select(), params.get("all") !== null);
  document.body.setAttribute("data-drawn", String(drawn));
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now() - t0)));
})();
