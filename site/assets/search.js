// Client-side search over window.PHLO_SEARCH (search-index.js): names, columns and
// descriptions. `index.html?q=term` searches on load.
(function () {
  "use strict";
  var entries = window.PHLO_SEARCH || [];
  var input = document.getElementById("q");
  var list = document.getElementById("results");
  var LIMIT = 50;

  function score(e, term) {
    var name = e.n.toLowerCase();
    if (name === term) return 0;
    if (name.indexOf(term) >= 0) return 1;
    for (var i = 0; i < e.c.length; i++) {
      if (e.c[i].toLowerCase().indexOf(term) >= 0) return 2;
    }
    if (e.d.toLowerCase().indexOf(term) >= 0) return 3;
    return -1;
  }
  var WHY = ["name", "name", "column", "description"];

  function render(text) {
    var term = text.trim().toLowerCase();
    while (list.firstChild) list.removeChild(list.firstChild);
    if (!term) return;
    var hits = [];
    entries.forEach(function (e) {
      var s = score(e, term);
      if (s >= 0) hits.push([s, e]);
    });
    hits.sort(function (a, b) { return a[0] - b[0] || (a[1].n < b[1].n ? -1 : a[1].n > b[1].n ? 1 : 0); });
    if (hits.length === 0) {
      var none = document.createElement("li");
      none.className = "none";
      none.textContent = "No model or source matches \u201c" + text.trim() + "\u201d.";
      list.appendChild(none);
      return;
    }
    hits.slice(0, LIMIT).forEach(function (h) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = h[1].u;
      a.textContent = h[1].n;
      li.appendChild(a);
      var tag = document.createElement("span");
      tag.className = "tag";
      tag.textContent = h[1].k;
      li.appendChild(document.createTextNode(" "));
      li.appendChild(tag);
      var why = document.createElement("span");
      why.className = "why";
      why.textContent = "matched " + WHY[h[0]] + (h[1].d ? " \u2014 " + h[1].d.split("\n")[0] : "");
      li.appendChild(why);
      list.appendChild(li);
    });
    if (hits.length > LIMIT) {
      var more = document.createElement("li");
      more.className = "none";
      more.textContent = (hits.length - LIMIT) + " more: refine the search.";
      list.appendChild(more);
    }
  }

  input.addEventListener("input", function () { render(input.value); });
  var q = new URLSearchParams(window.location.search).get("q");
  if (q) {
    input.value = q;
    render(q);
  }
})();
