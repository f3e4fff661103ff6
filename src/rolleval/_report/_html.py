"""Self-contained HTML pages for a run report, a comparison and a gate (one file each).

Everything is inline: CSS, a small script, hand-made SVG plots (:mod:`rolleval._report._svg`).
A Content-Security-Policy forbids every network request and every script but the page's own
(pinned by its hash). The facts (tables, banner) come from the same report model as the text
and Markdown views (:mod:`rolleval._report._document`). The problem browser's rollouts are read from
the run directories through the typed readers (:mod:`rolleval._report._html_data`) and embedded as
one zlib-compressed, base64-encoded JSON block that the browser decodes on first use
(``DecompressionStream``); model text is only ever shown through ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from ..rundir._store import atomic_write_bytes
from ._document import (
    Block,
    Bullets,
    Details,
    Para,
    Table,
    Title,
    changed_blocks,
    compare_doc,
    f4,
    gate_doc,
    incomplete_warnings,
    looks_table,
    needed_text,
    s4,
    task_blocks,
)
from ._html_assets import CSS, JS
from ._html_data import SideView, TaskView, read_side
from ._seqdoc import ANYTIME_NOTE, is_sequential, sequential_compare_doc, sequential_design_line
from ._svg import bars_svg, curves_svg, forest_svg, paired_bars_svg, scatter_svg, sequence_svg

__all__ = [
    "blocks_html",
    "compare_html",
    "gate_html",
    "report_html",
    "sequential_compare_html",
    "write_html",
]

_BAD = {"regression", "blocked", "run_failed"}
_GOOD = {"pass", "improvement", "equivalent_within_threshold", "significant_below_threshold"}


def _e(s: object) -> str:
    return escape(str(s), quote=True)


def _g(v: float | None) -> str:
    return "N/A" if v is None else f"{v:g}"


def _tone(verdict: str | None) -> str:
    if verdict in _BAD:
        return "bad"
    if verdict in _GOOD:
        return "good"
    return "warn"


# --------------------------------------------------------------------------- blocks -> HTML


def blocks_html(blocks: list[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Title):
            tag = f"h{min(b.level + 1, 4)}"
            badge = (
                f' <span class="badge {_tone(b.verdict)}">{_e(b.verdict.replace("_", " "))}</span>'
                if b.verdict
                else ""
            )
            out.append(f"<{tag}>{_e(b.text)}{badge}</{tag}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_e(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            head = "".join(
                f'<th class="{"l" if i < b.left else ""}">{_e(c)}</th>'
                for i, c in enumerate(b.columns)
            )
            keys: list[tuple[str, str] | None] = (
                list(b.problems) if b.problems else [None] * len(b.rows)
            )
            body = "".join(
                (
                    "<tr>"
                    if key is None
                    else f'<tr class="goto" data-task="{_e(key[0])}" data-problem="{_e(key[1])}" '
                    'title="show this problem\'s rollouts">'
                )
                + "".join(
                    f'<td class="{"l" if i < b.left else ""}">{_e(c)}</td>'
                    for i, c in enumerate(row)
                )
                + "</tr>"
                for row, key in zip(b.rows, keys)
            )
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif isinstance(b, Details):
            out.append(
                f"<details><summary>{_e(b.summary)}</summary>{blocks_html(b.blocks)}</details>"
            )
    return "\n".join(out)


# --------------------------------------------------------------------------- problem browser


def _json_script(value: Any) -> str:
    """JSON safe inside ``<script>``: ASCII only, no ``<``, ``>`` or ``&`` (lone surrogates
    are kept as ``\\udXXX`` escapes)."""
    s = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


#: Most bytes the embedded rollout block may take; texts are cut (middle out) to fit.
BLOB_BUDGET = 4_500_000
_MIN_CAP = 400


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    half = cap // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters cut ...]\n{text[-half:]}"


def _encode(blob: list[dict[str, Any]], cap: int | None) -> tuple[str, int]:
    if cap is not None:
        blob = [
            {
                **p,
                "sides": [
                    None if rs is None else [{**r, "text": _cut(r["text"], cap)} for r in rs]
                    for rs in p["sides"]
                ],
            }
            for p in blob
        ]
    raw = json.dumps(blob, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return base64.b64encode(zlib.compress(raw.encode("ascii"), 6)).decode("ascii"), len(raw)


def _pack(blob: list[dict[str, Any]]) -> tuple[str, int | None]:
    """The rollout block as base64 of zlib-compressed JSON, within :data:`BLOB_BUDGET`.

    When everything does not fit, every text longer than a cap keeps its head and tail; the
    cap is the largest that the compression ratio of the whole predicts to fit, lowered
    until it does (None: nothing cut)."""
    packed, raw_len = _encode(blob, None)
    if len(packed) <= BLOB_BUDGET:
        return packed, None
    lens = np.array(
        [len(r["text"]) for p in blob for rs in p["sides"] if rs for r in rs], dtype=np.int64
    )
    ratio = len(packed) / raw_len
    allowed = BLOB_BUDGET / ratio * 0.95 - (raw_len - int(lens.sum()))
    lo, hi = _MIN_CAP, int(lens.max())
    while lo < hi:  # the largest cap whose kept characters fit what is allowed
        mid = (lo + hi + 1) // 2
        if np.minimum(lens, mid).sum() <= allowed:
            lo = mid
        else:
            hi = mid - 1
    cap = lo
    while True:
        packed, _ = _encode(blob, cap)
        if len(packed) <= BLOB_BUDGET or cap <= _MIN_CAP:
            return packed, cap
        cap = max(int(cap * 0.8), _MIN_CAP)


def _browser(sides: list[tuple[str, SideView]], tasks: list[str]) -> tuple[str, str]:
    """The problem browser's markup and its embedded data blocks."""
    names = [n for n, _ in sides]
    problems: list[dict[str, Any]] = []
    blob: list[dict[str, Any]] = []
    for task in tasks:
        views = [sv.tasks.get(task) for _, sv in sides]
        ids = sorted({pid for v in views if v is not None for pid in v.problems})
        for pid in ids:
            ps = [v.problems.get(pid) if v is not None else None for v in views]
            stats = [
                None if p is None else [p.correct, p.gradable, p.unextracted, p.errored] for p in ps
            ]
            rates = [None if p is None else p.rate for p in ps]
            flags = []
            if len(ps) == 2 and None not in rates and rates[0] != rates[1]:
                flags.append("moved")
            if any(p is not None and p.correct < p.gradable for p in ps):
                flags.append("failed")
            if any(p is not None and p.unextracted for p in ps):
                flags.append("unextracted")
            if any(p is not None and p.errored for p in ps):
                flags.append("errored")
            problems.append({"t": task, "id": pid, "s": stats, "f": flags})
            first = next(p for p in ps if p is not None)
            blob.append(
                {
                    "prompt": first.prompt,
                    "reference": first.reference,
                    "sides": [None if p is None else p.rollouts for p in ps],
                }
            )
    packed, cap = _pack(blob)
    index = {"sides": names, "notes": [sv.note for _, sv in sides], "problems": problems}
    cols = "".join(f"<th>{_e(n)} correct</th>" for n in names)
    if len(names) == 2:
        cols += "<th>delta</th>"
    notes = "".join(f'<p class="muted">{_e(n)}: {_e(sv.note)}</p>' for n, sv in sides if sv.note)
    if cap is not None:
        notes += (
            f'<p class="muted" id="rv-cut">To keep this page under {BLOB_BUDGET // 1_000_000} MB, rollout texts '
            f"longer than {cap:,} characters are shown with their middle cut out; the run "
            "directories hold them whole (rolleval show).</p>"
        )
    markup = f"""<section id="browser"><h2>problems</h2>{notes}
<div class="controls"><input id="rv-search" type="search" placeholder="search problem id or task" aria-label="search">
<select id="rv-filter" aria-label="filter"><option value="all">all</option><option value="moved">moved</option>
<option value="failed">failed</option><option value="unextracted">unextracted</option><option value="errored">errored</option></select>
<span id="rv-count" class="muted"></span></div>
<div class="tablewrap"><table id="problems"><thead><tr><th class="l">task</th><th class="l">problem</th>{cols}<th class="l">flags</th></tr></thead><tbody></tbody></table></div>
<div id="rv-detail"><p class="muted">Click a problem to see its prompt, reference and every rollout.</p></div></section>"""
    data = (
        f'<script type="application/json" id="rv-index">{_json_script(index)}</script>\n'
        f'<script type="application/octet-stream" id="rv-blob">{packed}</script>'
    )
    return markup, data


def _page(title: str, body: str, data: str) -> str:
    digest = base64.b64encode(hashlib.sha256(JS.encode("utf-8")).digest()).decode()
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; connect-src 'none'; form-action 'none'; base-uri 'none'"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{CSS}</style></head>
<body>
{body}
{data}
<script>{JS}</script>
</body></html>
"""


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


# --------------------------------------------------------------------------- run page


def _percentile_rows(values: list[float], unit: str) -> list[list[str]]:
    if not values:
        return [["N/A", "no rollout reported it", ""]]
    a = np.asarray(values, dtype=float)
    return [
        [f"p{q}", f"{np.percentile(a, q):.3f} {unit}", f"over {len(a)} rollouts"]
        for q in (50, 90, 99)
    ] + [["max", f"{a.max():.3f} {unit}", f"over {len(a)} rollouts"]]


def _token_bars(tokens: list[int], within: list[int] | None = None) -> list[tuple[str, float]]:
    """Output tokens in up to 8 bins (labelled by their lower edges) spanning ``within``
    (default: ``tokens``), so that two sides binned within both share their bins."""
    if not tokens:
        return []
    a = np.asarray(tokens, dtype=float)
    span = np.asarray(within if within else tokens, dtype=float)
    edges = np.unique(np.linspace(span.min(), span.max(), 9).round())
    if len(edges) < 2:
        return [(f"{int(a.min())}", float(len(a)))]
    counts, edges = np.histogram(a, bins=edges)
    return [(f"{int(edges[i])}", float(c)) for i, c in enumerate(counts)]


def _accuracy_bars(view: TaskView) -> list[tuple[str, float]]:
    always_right = always_wrong = 0
    between: Counter[int] = Counter()
    none = 0
    for p in view.problems.values():
        r = p.rate
        if r is None:
            none += 1
        elif r == 1:
            always_right += 1
        elif r == 0:
            always_wrong += 1
        else:
            between[min(int(r * 4), 3)] += 1
    bars = [("0 (never)", float(always_wrong))]
    bars += [(f"<{(q + 1) / 4:g}", float(between[q])) for q in range(4)]
    bars.append(("1 (always)", float(always_right)))
    if none:
        bars.append(("no gradable", float(none)))
    return bars


#: One point of a curve: k, the value, the interval's ends (None: no interval).
_CurvePoint = tuple[int, float, float | None, float | None]


def _curve_series(rep: dict[str, Any]) -> list[tuple[str, list[_CurvePoint]]]:
    metrics = rep["metrics"]
    ks = [int(k) for k in rep.get("ks", [])]
    taus = [float(t) for t in rep.get("taus", [])]

    def pt(name: str, k: int) -> _CurvePoint | None:
        m = metrics.get("pass@1" if k == 1 else name)
        if not m or m.get("status") != "ok" or m.get("value") is None:
            return None
        ci = m.get("ci") or {}
        return (k, m["value"], ci.get("low"), ci.get("high"))

    def tau_s(t: float) -> str:
        return f"{t:g}"

    families = [("pass@k", "pass@{k}"), ("pass^k", "pass^{k}")]
    families += [(f"G-Pass@k_{tau_s(t)}", "G-Pass@{k}_" + tau_s(t)) for t in taus if 0 < t < 1]
    out = []
    for label, pattern in families:
        pts = [p for k in ks if (p := pt(pattern.format(k=k), k)) is not None]
        if pts:
            out.append((label, pts))
    return out


def _sequential_run_section(seq: dict[str, Any]) -> str:
    """A sequential run's section of its report page (the manifest's ``sequential``): the
    design, where each task stopped, the chart of each task's sequence and its looks."""
    from ..compare._sequential import stopped_line

    tasks = seq["tasks"]
    lines = "".join(f"<li>{_e(stopped_line(name, rec))}</li>" for name, rec in tasks.items())
    charts = "".join(
        _sequence_figure(name, rec.get("looks") or [], len(rec["order"]), seq["threshold"])
        for name, rec in tasks.items()
    )
    tables = blocks_html(
        [
            Details(f"{name}: every look", [looks_table(rec.get("looks") or [])])
            for name, rec in tasks.items()
        ]
    )
    return (
        f'<section class="sequential"><h2>sequential run: {_e(seq.get("verdict") or "not settled")}</h2>'
        f'<p class="muted">{_e(seq.get("method"))}; alpha {_e(seq.get("alpha"))} '
        f"({_e(seq.get('multiplicity'))}); threshold {_e(seq.get('threshold'))}; "
        f"order seed {_e(seq.get('order_seed'))}; rounds of {_e(seq.get('round_problems'))} "
        f"problems</p><ul>{lines}</ul>"
        f'<div class="plots">{charts}</div>{tables}</section>'
    )


def report_html(
    report: dict[str, Any],
    *,
    run: str | os.PathLike[str] | None = None,
    side: SideView | None = None,
) -> str:
    """A run report (``report.json`` content) as one HTML page; with ``run`` (its directory)
    or ``side`` (its problems, already read) also the per-problem distributions, health
    distributions and the problem browser."""
    if side is None:
        side = read_side(run) if run is not None else SideView("", note="run directory not given")
    parts = ["<h1>rolleval report</h1>"]
    warns = incomplete_warnings(report)
    if warns:
        parts.append(
            '<div class="banner warn" id="incomplete"><ul>'
            + "".join(f"<li>{_e(w)}</li>" for w in warns)
            + "</ul></div>"
        )
    parts.append(
        f'<p class="muted">run {_e(report.get("run_id"))} · model {_e(report.get("model"))} · '
        f"rolleval {_e(report.get('rolleval_version'))}</p>"
    )
    seq = report.get("sequential")
    if seq:
        parts.append(_sequential_run_section(seq))
    for name, rep in report["tasks"].items():
        view = side.tasks.get(name)
        figs = []
        series = _curve_series(rep)
        if series:
            figs.append(
                _figure(
                    curves_svg(series, label=f"{name}: pass@k, pass^k and G-Pass@k_tau against k"),
                    "pass@k, pass^k and G-Pass@k_tau against k; bands: the bootstrap intervals",
                )
            )
        if view is not None:
            figs.append(
                _figure(
                    bars_svg(_accuracy_bars(view), label=f"{name}: per-problem accuracy"),
                    "problems by accuracy over their gradable rollouts: never right, in between, always right",
                )
            )
            tb = _token_bars(view.output_tokens)
            if tb:
                figs.append(
                    _figure(
                        bars_svg(tb, label=f"{name}: output tokens", ylabel="rollouts"),
                        "output tokens per completed rollout (bin lower edges)",
                    )
                )
        blocks = task_blocks(rep, all_metrics=None)
        parts.append(f'<section class="task">{blocks_html(blocks[:1])}')
        parts.append(f'<div class="plots">{"".join(figs)}</div>')
        parts.append(blocks_html(blocks[1:]))
        if view is not None:
            parts.append(
                blocks_html(
                    [
                        Title("latency", 3),
                        Table(["percentile", "latency", ""], _percentile_rows(view.latencies, "s")),
                    ]
                )
            )
        parts.append("</section>")
    markup, data = _browser([("run", side)], list(dict.fromkeys([*report["tasks"], *side.tasks])))
    parts.append(markup)
    return _page(f"rolleval report {report.get('run_id')}", "\n".join(parts), data)


# --------------------------------------------------------------------------- compare page


def _needed_text(t: dict[str, Any]) -> str | None:
    """What it would take to decide, for a comparison that did not."""
    if t["verdict"] not in ("inconclusive", "insufficient_evidence"):
        return None
    if t.get("needed_problems") is not None or t.get("needed_rollouts") is not None:
        return needed_text(t)
    mde, thr, n = t.get("mde"), t.get("threshold"), t.get("n_problems")
    if mde and thr and n and mde > thr:
        return (
            f"the smallest detectable effect {mde:.4f} is above the threshold {thr:g}: "
            f"about {int(np.ceil(n * (mde / thr) ** 2))} problems would bring it to the threshold"
        )
    return t.get("reason")


def _banner(verdict: str, exit_code: int, head: str, tasks: list[dict[str, Any]]) -> str:
    lines = []
    for t in tasks:
        lines.append(
            f"<li><b>{_e(t['task'])}</b> {_e(t['metric'])}: "
            f'<span class="badge {_tone(t["verdict"])}">{_e(t["verdict"].replace("_", " "))}</span> '
            f"effect <b>{_e(s4(t.get('effect')))}</b>, "
            f"{round(100 * (t.get('confidence_level') or 0.95))}% CI "
            f"[{_e(s4(t.get('ci_low')))}, {_e(s4(t.get('ci_high')))}], "
            f"threshold ±{_e(_g(t.get('threshold')))}, "
            f"MDE {_e(f4(t.get('mde')))}, exit {t['exit_code']}</li>"
        )
        need = _needed_text(t)
        if need:
            lines.append(f'<li class="need">{_e(need)}</li>')
    return (
        f'<div class="banner {_tone(verdict)}" id="verdict"><h1>{_e(head)}: '
        f'<span class="badge {_tone(verdict)}">{_e(verdict.replace("_", " "))}</span> '
        f"(exit {exit_code})</h1><ul>{''.join(lines)}</ul></div>"
    )


def _scatter_points(b: TaskView, c: TaskView) -> list[tuple[float, float, int]]:
    pairs: Counter[tuple[float, float]] = Counter()
    for pid, pb in b.problems.items():
        pc = c.problems.get(pid)
        if pc is None or pb.rate is None or pc.rate is None:
            continue
        pairs[(pb.rate, pc.rate)] += 1
    return [(x, y, n) for (x, y), n in sorted(pairs.items())]


def _comparison_page(
    title: str,
    banner: str,
    comparisons: list[dict[str, Any]],
    facts: list[Block],
    baseline: str | None,
    candidate: str | None,
    changed: str = "",
    *,
    lead_figures: list[str] | None = None,
) -> str:
    """The page of a comparison or gate: banner, what changed, the figures (``lead_figures``
    first, then the forest plot of the ``comparisons`` and per task the scatter and token
    histograms), the facts and the problem browser of both sides."""
    tasks = list(dict.fromkeys(t["task"] for t in comparisons))
    # a candidate task paired across names (content or --task-map) is shown under the baseline's
    cand_of = {t["task"]: t.get("candidate_task") or t["task"] for t in comparisons}
    sb = read_side(baseline, tasks) if baseline else SideView("", note="baseline not given")
    sc = (
        read_side(candidate, list(cand_of.values()))
        if candidate
        else SideView("", note="candidate not given")
    )
    sc.tasks = {b: sc.tasks[c] for b, c in cand_of.items() if c in sc.tasks}
    parts = [banner, changed]
    figs = list(lead_figures or [])
    if comparisons:
        thr = max((t.get("threshold") or 0.0) for t in comparisons)
        rows = [
            (
                f"{t['task']} {t['metric']}",
                t.get("effect"),
                t.get("ci_low"),
                t.get("ci_high"),
                t["verdict"],
            )
            for t in comparisons
        ]
        figs.append(
            _figure(
                forest_svg(rows, threshold=thr, label="effect per task with its interval"),
                f"effect per task with its interval; grey band: the threshold ±{thr:g}",
            )
        )
    for task in tasks:
        vb, vc = sb.tasks.get(task), sc.tasks.get(task)
        if vb is not None and vc is not None:
            figs.append(
                _figure(
                    scatter_svg(_scatter_points(vb, vc), label=f"{task}: accuracy per problem"),
                    f"{task}: per-problem accuracy, baseline against candidate (below the diagonal: worse)",
                )
            )
            both = [*vb.output_tokens, *vc.output_tokens]
            bars = [_token_bars(vb.output_tokens, both), _token_bars(vc.output_tokens, both)]
            if any(bars):
                labels = [lab for lab, _ in (bars[0] or bars[1])]
                series = [
                    (side, [v for _, v in tb] if tb else [0.0] * len(labels))
                    for side, tb in zip(("baseline", "candidate"), bars)
                ]
                figs.append(
                    _figure(
                        paired_bars_svg(labels, series, label=f"{task}: output tokens"),
                        f"{task}: output tokens per completed rollout, baseline and candidate "
                        "over the same bins (lower edges) and one axis",
                    )
                )
    parts.append(f'<div class="plots">{"".join(figs)}</div>')
    parts.append(f'<section id="facts">{blocks_html(facts)}</section>')
    markup, data = _browser([("baseline", sb), ("candidate", sc)], tasks)
    parts.append(markup)
    return _page(title, "\n".join(parts), data)


def _changed_html(changed: dict[str, Any] | None) -> str:
    """The "what changed" block, shown beside the verdict banner."""
    blocks = changed_blocks(changed)
    return f'<section id="what-changed">{blocks_html(blocks)}</section>' if blocks else ""


def compare_html(result: dict[str, Any]) -> str:
    """A comparison (``CompareResult.to_dict()``) as one HTML page; a sequential run's
    (``SequentialCompareResult.to_dict()``) as :func:`sequential_compare_html`'s page."""
    if is_sequential(result):
        return sequential_compare_html(result)
    banner = _banner(result["verdict"], result["exit_code"], "rolleval compare", result["tasks"])
    # the banner replaces the title; "what changed" stands beside it, not among the facts
    facts = compare_doc({**result, "what_changed": None})[1:]
    return _comparison_page(
        "rolleval compare",
        banner,
        result["tasks"],
        facts,
        result.get("baseline"),
        result.get("candidate"),
        _changed_html(result.get("what_changed")),
    )


def _sequence_figure(name: str, looks: list[dict[str, Any]], budget: int, threshold: float) -> str:
    """The chart of one task's confidence sequence over its looks, with its caption."""
    points = [(lk["problems"], lk["lower"], lk["upper"], lk.get("effect")) for lk in looks]
    svg = sequence_svg(
        points, budget=budget, threshold=threshold, label=f"{name}: confidence sequence"
    )
    return _figure(
        svg,
        f"{name}: the confidence sequence of the mean difference over the problems used "
        f"(budget {budget}): band and segments the lower and upper bounds at each look, line "
        f"the running estimate, grey lines ±{threshold:g}, dotted the look it stopped at",
    )


def _sequential_banner(result: dict[str, Any]) -> str:
    """The verdict banner of a sequential comparison: per task where it stopped and why."""
    verdict = result["verdict"]
    lines = []
    for t in result["tasks"]:
        lines.append(
            f'<li><span class="badge {_tone(t["verdict"])}">{_e(t["verdict"].replace("_", " "))}</span> '
            f"{_e(result['metric'])}, {_e(t['summary'])}; threshold "
            f"±{_e(_g(result.get('threshold')))}</li>"
        )
        if t.get("reason"):
            lines.append(f'<li class="need">why it stopped: {_e(t["reason"])}</li>')
    observe = ", --observe" if result.get("observe") else ""
    return (
        f'<div class="banner {_tone(verdict)}" id="verdict"><h1>rolleval compare (sequential): '
        f'<span class="badge {_tone(verdict)}">{_e(verdict.replace("_", " "))}</span> '
        f"(exit {result['exit_code']}{observe})</h1>"
        f'<p class="muted">{_e(sequential_design_line(result))}</p>'
        f'<ul>{"".join(lines)}</ul><p class="muted">{_e(ANYTIME_NOTE)}</p></div>'
    )


def sequential_compare_html(result: dict[str, Any]) -> str:
    """A sequential run's comparison (``SequentialCompareResult.to_dict()``) as one HTML
    page in the compare page's style: the banner (verdict, design, where and why each task
    stopped), what changed, per task the chart of its confidence sequence, the forest plot
    of the last look's bounds, the facts with every look, and the problem browser."""
    figures = [
        _sequence_figure(t["task"], t.get("sequence") or [], t["budget"], result["threshold"])
        for t in result["tasks"]
    ]
    last = [
        {
            "task": t["task"],
            "metric": result["metric"],
            "verdict": t["verdict"],
            "effect": ((t.get("sequence") or [{}])[-1]).get("effect"),
            "ci_low": t.get("ci_low"),
            "ci_high": t.get("ci_high"),
            "threshold": result["threshold"],
        }
        for t in result["tasks"]
    ]
    facts = sequential_compare_doc({**result, "what_changed": None}, collapse_looks=False)[1:]
    return _comparison_page(
        "rolleval compare (sequential)",
        _sequential_banner(result),
        last,
        facts,
        result.get("baseline"),
        result.get("candidate"),
        _changed_html(result.get("what_changed")),
        lead_figures=figures,
    )


def gate_html(outcome: dict[str, Any]) -> str:
    """A gate outcome (``GateResult.to_dict()``) as one HTML page."""
    comps = outcome.get("comparisons", [])
    banner = _banner(outcome["verdict"], outcome["exit_code"], "rolleval gate", comps)
    facts = gate_doc({**outcome, "what_changed": None})[1:]
    sides = (comps[0].get("sides") or {}) if comps else {}
    return _comparison_page(
        "rolleval gate",
        banner,
        comps,
        facts,
        (sides.get("baseline") or {}).get("source"),
        (sides.get("candidate") or {}).get("source"),
        _changed_html(outcome.get("what_changed")),
    )


def write_html(path: str | os.PathLike[str], html: str) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(p, html.encode("utf-8", "replace"))
    return p
