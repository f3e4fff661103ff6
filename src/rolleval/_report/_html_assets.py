"""The page's inline stylesheet and script (no external asset, no network request).

The script only ever puts data into the page through ``textContent``: model text is shown,
never interpreted. Control characters and bidirectional overrides are replaced by a visible
``‹U+XXXX›`` marker so that they cannot reorder or hide what follows them.
"""

CSS = """
:root{--bad:#b00020;--good:#1b5e20;--warn:#8a6d00;--line:#d0d0d0}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;max-width:80rem;padding:0 1rem;color:#222}
h1{font-size:1.45rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid var(--line)}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0;font-variant-numeric:tabular-nums}
td,th{border:1px solid var(--line);padding:.2rem .5rem;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.banner{padding:1rem 1.2rem;border-radius:.5rem;margin:.5rem 0 1rem;background:#f6f6f6;border-left:.5rem solid #999}
.banner.bad{border-color:var(--bad);background:#fdecee}.banner.good{border-color:var(--good);background:#edf7ee}.banner.warn{border-color:#f0b400;background:#fff8e1}
.badge{padding:.05rem .45rem;border-radius:.3rem;font-weight:600;background:#ddd}
.badge.bad{color:#fff;background:var(--bad)}.badge.good{color:#fff;background:var(--good)}.badge.warn{background:#ffe082}
.muted{color:#666}.plots{display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-start}
.plots figure{margin:0}.plots figcaption{font-size:.85rem;color:#555;max-width:440px}
svg.plot{background:#fff;border:1px solid #eee;max-width:100%;height:auto}
#browser .controls{display:flex;gap:.5rem;margin:.5rem 0;flex-wrap:wrap}
#browser input{flex:1;min-width:14rem;padding:.3rem}
#problems{width:100%}#problems tbody tr{cursor:pointer}#problems tbody tr:hover{background:#f0f6ff}
#problems tbody tr.sel{background:#dbeafe}
tr.goto{cursor:pointer}tr.goto:hover{background:#f0f6ff}tr.goto td:first-child{text-decoration:underline dotted}
.tablewrap{max-height:24rem;overflow:auto;border:1px solid var(--line)}
.sides{display:grid;grid-template-columns:repeat(var(--n,1),minmax(0,1fr));gap:1rem}
.rollout{border:1px solid var(--line);border-radius:.3rem;margin:.4rem 0;padding:.3rem .5rem}
.rollout.ok{border-left:.3rem solid var(--good)}.rollout.wrong{border-left:.3rem solid var(--bad)}.rollout.none{border-left:.3rem solid #999}
.rollout .meta{font-size:.8rem;color:#444}
pre.text{white-space:pre-wrap;word-break:break-word;unicode-bidi:isolate;direction:ltr;background:#fafafa;padding:.4rem;margin:.3rem 0;max-height:22rem;overflow:auto;font-size:.85rem}
details>summary{cursor:pointer}
"""

JS = r"""
"use strict";
(function () {
  var index = JSON.parse(document.getElementById("rv-index").textContent);
  var sides = index.sides, problems = index.problems, details = null;
  var VIS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\ufeff]/g;
  function visible(s) {
    return String(s === null || s === undefined ? "" : s).replace(VIS, function (c) {
      return "\u2039U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u203a";
    });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = visible(text);
    return e;
  }
  function rate(s) { return s && s[1] ? s[0] / s[1] : null; }
  function fmt(v) { return v === null ? "N/A" : v.toFixed(3); }
  async function loadDetails() {
    if (details) return details;
    var bin = atob(document.getElementById("rv-blob").textContent.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    details = JSON.parse(await new Response(stream).text());
    return details;
  }
  var tbody = document.querySelector("#problems tbody");
  var rows = [];
  problems.forEach(function (p, i) {
    var tr = document.createElement("tr");
    tr.dataset.i = String(i);
    tr.appendChild(el("td", "l", p.t));
    tr.appendChild(el("td", "l", p.id));
    p.s.forEach(function (s) {
      tr.appendChild(el("td", "", s ? s[0] + "/" + s[1] + " (" + fmt(rate(s)) + ")" : "N/A"));
    });
    if (sides.length === 2) {
      var a = rate(p.s[0]), b = rate(p.s[1]);
      tr.appendChild(el("td", "", a === null || b === null ? "N/A" : (b - a >= 0 ? "+" : "") + (b - a).toFixed(3)));
    }
    tr.appendChild(el("td", "l", p.f.join(" ")));
    tr.addEventListener("click", function () { show(i); });
    tbody.appendChild(tr);
    rows.push(tr);
  });
  var search = document.getElementById("rv-search"), filter = document.getElementById("rv-filter");
  var count = document.getElementById("rv-count");
  function applyFilter() {
    var q = search.value.toLowerCase(), f = filter.value, shown = 0;
    problems.forEach(function (p, i) {
      var ok = (!q || p.id.toLowerCase().indexOf(q) >= 0 || p.t.toLowerCase().indexOf(q) >= 0) &&
        (f === "all" || p.f.indexOf(f) >= 0);
      rows[i].hidden = !ok;
      if (ok) shown++;
    });
    count.textContent = shown + " of " + problems.length + " problems";
  }
  search.addEventListener("input", applyFilter);
  filter.addEventListener("change", applyFilter);
  applyFilter();
  var pane = document.getElementById("rv-detail");
  async function show(i) {
    rows.forEach(function (r) { r.classList.remove("sel"); });
    rows[i].classList.add("sel");
    var p = problems[i], d = (await loadDetails())[i];
    pane.replaceChildren();
    pane.appendChild(el("h3", "", p.t + " / " + p.id));
    pane.appendChild(el("div", "muted", "prompt"));
    pane.appendChild(el("pre", "text prompt", d.prompt));
    pane.appendChild(el("div", "muted", "reference"));
    pane.appendChild(el("pre", "text reference", d.reference));
    var grid = el("div", "sides");
    grid.style.setProperty("--n", String(sides.length));
    sides.forEach(function (side, k) {
      var col = el("div", "side side-" + side);
      var s = p.s[k];
      col.appendChild(el("h3", "", side + ": " + (s ? s[0] + "/" + s[1] + " correct" : "not available")));
      var list = d.sides[k];
      if (!list) { col.appendChild(el("p", "muted", index.notes[k] || "no rollouts")); }
      else list.forEach(function (r) {
        var box = el("div", "rollout " + (r.correct === true ? "ok" : r.correct === false ? "wrong" : "none"));
        var outcome = r.correct === true ? "correct" : r.correct === false ? "wrong" : "not judged";
        box.appendChild(el("div", "meta",
          "#" + r.i + " " + outcome + " | status " + r.status + " | finish " + (r.finish || "N/A") +
          " | tokens " + (r.tokens === null ? "N/A" : r.tokens) +
          " | latency " + (r.latency === null ? "N/A" : r.latency.toFixed(2) + " s") +
          " | extracted " + (r.extracted === null ? "(none)" : r.extracted) +
          " | cluster " + (r.cluster === null ? "N/A" : r.cluster) +
          (r.grader_error ? " | grader error " + r.grader_error : "")));
        if (r.thought !== undefined && r.thought !== null) {
          var thought = el("details", "thought");
          thought.appendChild(el("summary", "muted", "thought (" + r.thought.length + " chars)"));
          thought.appendChild(el("pre", "text thought-text", r.thought));
          box.appendChild(thought);
        }
        box.appendChild(el("pre", "text rollout-text", r.text));
        col.appendChild(box);
      });
      grid.appendChild(col);
    });
    pane.appendChild(grid);
    pane.scrollIntoView({block: "nearest"});
  }
  // a row naming a problem elsewhere on the page (the problems that moved most) opens it
  document.querySelectorAll("tr[data-problem]").forEach(function (tr) {
    var i = problems.findIndex(function (p) {
      return p.t === tr.dataset.task && p.id === tr.dataset.problem;
    });
    if (i < 0) return;
    tr.addEventListener("click", function () {
      rows[i].hidden = false;
      rows[i].scrollIntoView({block: "nearest"});
      show(i);
    });
  });
  document.body.dataset.ready = "1";
})();
"""
