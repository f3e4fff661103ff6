"""One report model for every renderer.

A run report (``report.json``), a comparison (``CompareResult.to_dict()``) and a gate
outcome (``GateResult.to_dict()``) are each turned into one short list of blocks (titles,
paragraphs, tables, bullet lists, collapsible details) by :func:`run_doc`,
:func:`compare_doc` and :func:`gate_doc`. The text, Markdown and HTML renderers
(:mod:`rolleval._report._render`, :mod:`rolleval._report._html`) only lay these blocks out, so every format
states the same facts: every suite number with numerator/denominator and interval, N/A with
its reason, the verdict with effect, interval, threshold, exit code and MDE, and the problems
compared and dropped by reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Block",
    "Bullets",
    "Details",
    "Para",
    "Table",
    "Title",
    "changed_blocks",
    "compact_metrics",
    "compare_doc",
    "f4",
    "gate_doc",
    "incomplete_warnings",
    "looks_table",
    "metric_group",
    "run_doc",
    "s4",
]


@dataclass
class Title:
    text: str
    level: int = 1
    verdict: str | None = None
    """A verdict word shown as a badge (coloured on a terminal, styled in HTML)."""


@dataclass
class Para:
    text: str


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    left: int = 1
    """How many leading columns are text (left-aligned); the rest are numbers."""
    problems: list[tuple[str, str]] | None = None
    """Per row, the (task, problem id) it is about: the HTML page opens that problem's
    rollouts when the row is clicked."""


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Details:
    summary: str
    blocks: list[Block] = field(default_factory=list)


Block = Title | Para | Table | Bullets | Details


def f4(v: float | None) -> str:
    return "N/A" if v is None else f"{v:.4f}"


def s4(v: float | None) -> str:
    return "N/A" if v is None else f"{v:+.4f}"


def _p(v: float | None) -> str:
    return "N/A" if v is None else f"{v:.3g}"


def _count(x: float | None) -> str:
    if x is None:
        return "N/A"
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"


def _pct(r: float | None) -> str:
    return "N/A" if r is None else f"{100 * r:.2f}%"


def _words(v: str) -> str:
    return v.replace("_", " ")


def _num_g(v: Any) -> str:
    return "N/A" if v is None else f"{v:g}"


# --------------------------------------------------------------------------- run report


HEALTH_ROWS = (
    "n_unextracted",
    "n_truncated",
    "n_short",
    "infra_errors",
    "timeouts",
    "grader_errors",
    "skipped",
    "missing",
)


def _ci_cell(ci: dict[str, Any] | None) -> str:
    if not ci:
        return "no interval"
    if ci.get("status") == "ok":
        return f"[{f4(ci['low'])}, {f4(ci['high'])}]"
    if ci.get("status") == "degenerate" and ci.get("bound_low") is not None:
        # every problem scored the same: the zero-width interval bounds nothing; the exact
        # bound (Clopper-Pearson on the problems that could differ) does
        return f"exact [{f4(ci['bound_low'])}, {f4(ci['bound_high'])}] (degenerate)"
    if ci.get("low") is not None and ci.get("status") == "degenerate":
        return f"[{f4(ci['low'])}, {f4(ci['high'])}] degenerate"
    return f"N/A: {ci.get('reason') or ci.get('status')}"


#: Metrics of agreement between a problem's rollouts rather than of accuracy (a run's
#: "consistency" group): pass^k, G-Pass@k_tau, mG-Pass@k, consecutive pass^k, self-consistency.
_CONSISTENCY_PREFIXES = ("pass^", "G-Pass@", "mG-Pass@", "consecutive-pass^", "self_consistency")

METRIC_LEGEND = (
    "accuracy: pass@k = chance that at least one of k rollouts is correct; maj@n = the "
    "majority answer is correct. consistency across rollouts: pass^k = all k correct; "
    "G-Pass@k_tau = at least tau*k of k correct; mG-Pass@k = G-Pass@k averaged over tau in "
    "[0.5, 1]; consecutive-pass^k = k consecutive rollouts correct; self_consistency = the "
    "share of a problem's rollouts that give its most common answer, right or wrong (how much "
    "the rollouts agree, not accuracy; N/A with one rollout)"
)


def metric_group(name: str) -> str:
    """``accuracy``, ``consistency`` (agreement across rollouts) or ``judgement`` (a grader's
    named per-rollout metric)."""
    if name.startswith("metrics."):
        return "judgement"
    return "consistency" if name.startswith(_CONSISTENCY_PREFIXES) else "accuracy"


def compact_metrics(rep: dict[str, Any]) -> list[str]:
    """The default view's metrics: pass@1, pass@k and pass^k at every reported k, and the
    task's judgement metrics (``metrics.em``, ``metrics.f1``: what a graded task scores)."""
    ks = [int(k) for k in rep.get("ks", []) if int(k) > 1]
    wanted = ["pass@1", *(f"{f}{k}" for k in ks for f in ("pass@", "pass^"))]
    wanted += [m for m in rep["metrics"] if m.startswith("metrics.")]
    return [m for m in wanted if m in rep["metrics"]]


def metric_rows(rep: dict[str, Any], names: list[str] | None = None) -> list[list[str]]:
    rows = []
    for name in rep["metrics"] if names is None else names:
        m = rep["metrics"][name]
        if m["status"] != "ok":
            rows.append([name, "N/A", f"N/A: {m.get('reason') or 'not measured'}", ""])
            continue
        numden = f"{_count(m['numerator'])}/{m['denominator']}"
        if m["denominator"] != m["n_total"]:
            numden += f" (of {m['n_total']})"
        se = (m.get("se") or {}).get("clt")
        value = f4(m["value"]) + (f" (se {f4(se)})" if se is not None else "")
        rows.append([name, value, _ci_cell(m.get("ci")), numden])
    return rows


def _metric_tables(rep: dict[str, Any], all_metrics: bool | None) -> list[Block]:
    """The metric tables: compact (pass@1, pass@k, pass^k) unless ``all_metrics``; every
    metric grouped (accuracy, consistency across rollouts, judgement metrics) when true, or,
    when None, after the compact table in a collapsible "all metrics" (Markdown, HTML)."""
    level = round(rep["inference"]["confidence_level"] * 100)
    cols = ["value", f"{level}% CI", "numerator/denominator"]
    compact = compact_metrics(rep)
    groups: dict[str, list[str]] = {"accuracy": [], "consistency": [], "judgement": []}
    for name in rep["metrics"]:
        groups[metric_group(name)].append(name)
    heads = {
        "accuracy": "accuracy",
        "consistency": "consistency across rollouts",
        "judgement": "judgement metric",
    }
    full: list[Block] = [
        Table([heads[g], *cols], metric_rows(rep, names)) for g, names in groups.items() if names
    ]
    full.append(Para(METRIC_LEGEND))
    if all_metrics:
        return full
    out: list[Block] = [Table(["metric", *cols], metric_rows(rep, compact))]
    hidden = len(rep["metrics"]) - len(compact)
    if all_metrics is None:
        out.append(Details(f"all {len(rep['metrics'])} metrics", full))
    elif hidden:
        out.append(
            Para(f"{hidden} more metrics (maj@n, G-Pass@k, self_consistency, ...): --all-metrics")
        )
    return out


def incomplete_warnings(report: dict[str, Any]) -> list[str]:
    """One warning per task of a run report with rollouts missing (an interrupted run):
    its numbers are over part of the problems. A task of a sequential run that stopped on
    its verdict gets a note instead (its design left the other problems unvisited; such a
    run cannot be resumed)."""
    out = []
    seq = (report.get("sequential") or {}).get("tasks") or {}
    for name, rep in report.get("tasks", {}).items():
        miss = (rep.get("health") or {}).get("missing") or {}
        if not miss.get("count"):
            continue
        total = rep["problems"]["total"]
        complete = rep["problems"].get("complete")
        head = (
            f"{complete} of {total} problems"
            if complete is not None
            else f"{total - rep['problems'].get('with_gradable_rollout', 0)} of {total} problems without a gradable rollout"
        )
        if name in seq:
            out.append(_sequential_note(name, seq[name], head))
            continue
        out.append(
            f"WARNING: incomplete run: task {name}: {head} complete ({miss['count']} of "
            f"{miss['of']} rollouts missing); the numbers below cover only what was run: resume "
            "it (rolleval run --out RUN --resume)"
        )
    return out


def _sequential_note(name: str, rec: dict[str, Any], head: str) -> str:
    """The incomplete-run line of a sequential run's task: settled (the design stopped it)
    or not (interrupted; a sequential run is not resumable)."""
    if rec.get("verdict") is not None:
        return (
            f"sequential run: task {name}: {head} complete: the run stopped when its verdict "
            f"was settled ({_words(rec['verdict'])}); the numbers below cover only the "
            "problems it visited"
        )
    return (
        f"WARNING: incomplete sequential run: task {name}: {head} complete and no verdict "
        "settled; the numbers below cover only what was run (a sequential run cannot be "
        "resumed: start it again)"
    )


def side_incomplete_warnings(result: dict[str, Any]) -> list[Block]:
    """A comparison's or gate's incomplete sides (given under --allow-incomplete), first."""
    return [
        Para(
            f"WARNING: incomplete run: the {i['side']}'s task {i['task']} has {i['missing_rollouts']} "
            f"of {i['requested_rollouts']} rollouts missing (status {i['run_status']!r}); "
            "the verdict covers only what was run"
        )
        for i in result.get("incomplete") or []
    ]


def task_blocks(rep: dict[str, Any], *, all_metrics: bool | None = False) -> list[Block]:
    """One task's blocks; ``all_metrics`` as for :func:`_metric_tables`."""
    ro, pr, inf, h = rep["rollouts"], rep["problems"], rep["inference"], rep["health"]
    out: list[Block] = [Title(f"task {rep.get('task')}", 2)]
    timeouts = (
        "timeouts count as failures (estimand: passes within budget)"
        if rep.get("timeout_policy", "failure") == "failure"
        else "timeouts are excluded, like infra errors"
    )
    out.append(
        Para(
            f"grader {rep.get('grader') or 'unknown'}; denominator policy {rep['denominator_policy']}; "
            f"score {rep['score_key']}; {timeouts}; ks {', '.join(str(k) for k in rep.get('ks', []))}; "
            f"taus {', '.join(_num_g(t) for t in rep.get('taus', []))}"
        )
    )
    dist = ", ".join(
        f"{v} problems x {k}"
        for k, v in sorted(ro["gradable_per_problem"].items(), key=lambda kv: -int(kv[0]))
    )
    out.append(
        Para(
            f"problems {pr['total']} ({pr['with_gradable_rollout']} with a gradable rollout); "
            f"rollouts requested {ro['requested']}, records {ro['records']}, completed {ro['completed']}, "
            f"gradable {ro['gradable']}, judged {ro['judged']}, correct {ro['correct']}; "
            f"gradable per problem: {dist or 'none'}"
        )
    )
    out += _metric_tables(rep, all_metrics)
    out.append(
        Para(
            f"intervals: {inf['method']}, confidence {_num_g(inf['confidence_level'])}, "
            f"{inf['n_resamples']} resamples, seed {inf['seed']}"
        )
    )
    hrows = []
    for key in HEALTH_ROWS:
        v = h.get(key)
        if v is None:
            continue
        rate = _pct(v["rate"]) if v["rate"] is not None else f"N/A: {v.get('reason', '')}"
        hrows.append([key, f"{v['count']}/{v['of']}", rate])
    tok = h.get("output_tokens_mean") or {}
    hrows.append(
        [
            "output_tokens_mean",
            f"over {tok.get('of', 0)}",
            f"{tok['value']:.3f}"
            if tok.get("value") is not None
            else f"N/A: {tok.get('reason', 'not measured')}",
        ]
    )
    hrows += _thought_rows(h)
    out.append(Table(["health", "count/of", "rate"], hrows))
    notes = [f"WARNING: {w}" for w in rep.get("warnings", [])]
    if h.get("duplicate_judgements"):
        notes.append(f"{h['duplicate_judgements']} duplicate judgements ignored")
    if h.get("duplicate_prompts"):
        notes.append(f"{h['duplicate_prompts']} duplicate prompt records ignored")
    if h.get("unexpected_indices"):
        notes.append(f"{h['unexpected_indices']} rollouts beyond n ignored")
    for f, line in (h.get("torn_lines") or {}).items():
        notes.append(f"torn last line {line} ignored in {f}")
    if notes:
        out.append(Bullets(notes))
    return out


def _thought_rows(h: dict[str, Any]) -> list[list[str]]:
    """Health rows of a reasoning model (none when no rollout holds a thought)."""
    rows = []
    v = h.get("n_truncated_in_thought")
    if v is not None:
        rate = _pct(v["rate"]) if v["rate"] is not None else f"N/A: {v.get('reason', '')}"
        rows.append(["n_truncated_in_thought", f"{v['count']}/{v['of']}", rate])
    for key in ("thought_length_mean", "answer_tokens_mean"):
        m = h.get(key)
        if m is None:
            continue
        label = f"{key} ({m['unit']})" if m.get("unit") else key
        value = f"{m['value']:.1f}" if m.get("value") is not None else f"N/A: {m.get('reason', '')}"
        rows.append([label, f"over {m.get('of', 0)}", value])
    return rows


def run_doc(report: dict[str, Any], *, all_metrics: bool | None = False) -> list[Block]:
    """The blocks of a run report (``report.json``); ``all_metrics``: see :func:`task_blocks`."""
    out: list[Block] = [Title("rolleval report")]
    out += [Para(w) for w in incomplete_warnings(report)]
    out.append(
        Para(
            f"run {report.get('run_id') or '?'}; model {report.get('model') or '?'}; "
            f"rolleval {report.get('rolleval_version') or '?'}; report version {report.get('report_version')}"
        )
    )
    seq = report.get("sequential")
    if seq:
        from ..compare._sequential import stopped_line

        out.append(
            Para(
                f"sequential run ({seq.get('method')}; alpha {seq.get('alpha')}, "
                f"{seq.get('multiplicity')}; threshold {seq.get('threshold')}): "
                f"{seq.get('verdict') or 'not settled'}"
            )
        )
        out.append(Bullets([stopped_line(name, rec) for name, rec in seq["tasks"].items()]))
        for name, rec in seq["tasks"].items():
            n = len(rec.get("looks") or [])
            out.append(
                Details(
                    f"{name}: the {n} looks of the confidence sequence",
                    [looks_table(rec.get("looks") or [])],
                )
            )
    for rep in report["tasks"].values():
        out += task_blocks(rep, all_metrics=all_metrics)
    if not report["tasks"]:
        out.append(Para("(no tasks)"))
    return out


def looks_table(looks: list[dict[str, Any]]) -> Table:
    """Every look of one task of a sequential run (``SequentialLook`` records: the task's
    ``looks`` in the manifest's ``sequential``, a sequential comparison's ``sequence``): the
    problems used, those with a paired difference, the running mean difference and the
    confidence sequence's bounds on it, and the verdict that look gave."""
    rows = [
        [
            str(i),
            str(look["problems"]),
            str(look["values"]),
            s4(look.get("effect")),
            s4(look["lower"]),
            s4(look["upper"]),
            _words(look["verdict"]) if look.get("verdict") else "look again",
        ]
        for i, look in enumerate(looks, 1)
    ]
    return Table(
        ["look", "problems used", "with a difference", "effect", "lower", "upper", "verdict"],
        rows,
        left=1,
    )


# --------------------------------------------------------------------------- comparison


def verdict_line(t: dict[str, Any]) -> str:
    """Effect, interval, p, threshold and exit code of one task comparison."""
    level = round(100 * t["confidence_level"]) if t.get("confidence_level") else 95
    if t.get("effect") is None:
        return f"no estimate: {t.get('reason') or 'not measured'} (exit {t['exit_code']})"
    ci = f"[{s4(t.get('ci_low'))}, {s4(t.get('ci_high'))}]"
    if t.get("ci_status") == "degenerate":
        ci += " degenerate: every paired difference is equal"
    if t.get("unit") == "cluster" and t.get("n_clusters") is not None:
        ci += f" over {t['n_clusters']} clusters"
    p = _p(t.get("pvalue")) + (" exact" if t.get("pvalue_exact") else "")
    return (
        f"effect {s4(t['effect'])} ({t.get('better', 'higher')} is better; negative = candidate worse), "
        f"{level}% CI {ci}, p = {p}, threshold ±{_num_g(t.get('threshold'))}, "
        f"alpha {_num_g(t.get('alpha'))}, exit {t['exit_code']}"
    )


def needed_text(t: dict[str, Any]) -> str:
    """What it would take to decide: more problems and/or more rollouts per problem."""
    ways = []
    if t.get("needed_problems") is not None:
        ways.append(f"about {t['needed_problems']} problems")
    if t.get("needed_rollouts") is not None:
        ways.append(f"{t['needed_rollouts']} rollouts per problem")
    return "to decide: " + ", or ".join(ways)


def _needed(t: dict[str, Any]) -> str | None:
    if t.get("needed_problems") is None and t.get("needed_rollouts") is None:
        return None
    return needed_text(t)


def mde_line(t: dict[str, Any]) -> str:
    """The minimum detectable effect at the run's size, and what it would take to decide."""
    if t.get("mde") is None:
        line = "minimum detectable effect: N/A" + (
            f" ({t['power_note']})" if t.get("power_note") else ""
        )
    else:
        line = f"minimum detectable effect ({round(100 * t['power'])}% power): {f4(t['mde'])}"
    need = _needed(t)
    return f"{line}; {need}" if need else line


def _problems_line(t: dict[str, Any]) -> str:
    pr, al = t["problems"], t.get("alignment") or {}
    per_side = pr.get("dropouts_per_side") or {}
    return (
        f"problems compared {pr['compared']} of {pr['compared'] + pr['dropped_total']} "
        f"(baseline {pr.get('baseline')}, candidate {pr.get('candidate')}, matched {pr.get('matched')} "
        f"by {_words(al.get('by', '?'))}); dropped {pr['dropped_total']} in all"
        + (
            f"; dropouts baseline {per_side.get('baseline', 0)}, candidate {per_side.get('candidate', 0)}"
            if per_side
            else ""
        )
        + f"; moved {t.get('n_moved', 'N/A')} of {pr['compared']} (problems whose "
        f"{t.get('metric', 'value')} differs between the sides by any amount, chance included)"
    )


def _dropped_lines(t: dict[str, Any]) -> list[str]:
    """One line per reason a problem was dropped, with the first ids."""
    out = []
    for k, d in sorted(t["problems"]["dropped"].items()):
        ids = d.get("ids") or []
        more = ", ..." if d["count"] > len(ids[:5]) else ""
        out.append(
            f"dropped {d['count']} {_words(k)}" + (f": {', '.join(ids[:5])}{more}" if ids else "")
        )
    return out


def _mover_side(m: dict[str, Any], side: str) -> str:
    rate = f4(m.get(f"{side}_rate"))
    if m.get(f"c_{side}") is None:
        return rate
    return f"{_count(m[f'c_{side}'])}/{_count(m.get(f'n_{side}'))} ({rate})"


def _pair_name(t: dict[str, Any]) -> str:
    """``base`` or, for tasks paired across names, ``base ~ cand``."""
    cand = t.get("candidate_task")
    return t["task"] if not cand or cand == t["task"] else f"{t['task']} ~ {cand}"


def comparison_blocks(t: dict[str, Any], *, adjusted: str | None = None) -> list[Block]:
    """The blocks of one task's comparison (an entry of ``tasks`` in compare's JSON): the
    verdict and why, the problems, notes and warnings, the tables, the method."""
    out: list[Block] = [
        Title(f"task {_pair_name(t)}: {t['metric']}", 2, verdict=t["verdict"]),
        Para(verdict_line(t)),
    ]
    if adjusted and adjusted != t["verdict"]:
        out.append(Para(f"after Holm across tasks: {_words(adjusted)}"))
    if t.get("reason"):
        out.append(Para(f"why: {t['reason']}"))
    out.append(Para(mde_line(t)))
    out.append(Para(_problems_line(t)))
    notes = _comparison_notes(t)
    if notes:
        out.append(Bullets(notes))
    rows = []
    for k, v in sorted((t.get("health") or {}).items()):
        rows.append([k, f4(v.get("baseline")), f4(v.get("candidate")), s4(v.get("delta"))])
    if rows:
        out.append(Table(["health", "baseline", "candidate", "delta"], rows))
    out += _sides_table(t.get("sides") or {})
    out += run_level_blocks(t.get("run_level"))
    sc = t.get("self_consistency")
    if sc:
        out.append(
            Para(
                f"self-consistency (not gating): effect {s4(sc.get('effect'))} "
                f"[{s4(sc.get('ci_low'))}, {s4(sc.get('ci_high'))}], p = {_p(sc.get('pvalue'))}, "
                f"{_words(sc.get('verdict', ''))}"
            )
        )
    out += _movers_table(t)
    out.append(Details("method", [Para(m) for m in _method_lines(t)]))
    return out


def _comparison_notes(t: dict[str, Any]) -> list[str]:
    """Dropped problems, warnings, an incomplete side, the unjudged rollouts' check and the
    alignment's notes, one line each."""
    notes = _dropped_lines(t) + [f"WARNING: {w}" for w in t.get("warnings", [])]
    sides = t.get("sides") or {}
    for side in ("baseline", "candidate"):
        s = sides.get(side) or {}
        if s.get("missing_rollouts"):
            notes.append(
                f"WARNING: the {side} is incomplete: {s['missing_rollouts']} rollouts missing "
                f"(status {s.get('run_status')!r})"
            )
    uj = t.get("unjudged") or {}
    if uj:
        wc = uj.get("worst_case")
        line = (
            f"unjudged rollouts {_pct(uj.get('baseline_share'))} baseline, "
            f"{_pct(uj.get('candidate_share'))} candidate (difference {_pct(uj.get('difference'))}, "
            f"bound checked above {_num_g(uj.get('threshold'))}: {'yes' if uj.get('bound_checked') else 'no'})"
        )
        if wc:
            line += (
                f"; worst case ({wc.get('fill')}) gives {_words(wc['verdict'])}, "
                f"effect {s4(wc.get('effect'))} [{s4(wc.get('ci_low'))}, {s4(wc.get('ci_high'))}]"
            )
        notes.append(line)
    notes += [f"note: {n}" for n in (t.get("alignment") or {}).get("notes", [])]
    return notes


def _sides_table(sides: dict[str, Any]) -> list[Block]:
    """The two sides: source, problems, rollouts correct/gradable/requested, missing."""
    srows = []
    for side in ("baseline", "candidate"):
        s = sides.get(side) or {}
        if not s:
            continue
        pooled = f", {s['runs']} runs pooled" if (s.get("runs") or 1) > 1 else ""
        srows.append(
            [
                side,
                (s.get("label") or f"{s.get('kind')} {s.get('run_id') or ''}".strip()) + pooled,
                f"{s.get('problems')} ({s.get('matched_problems')} matched)",
                f"{s.get('correct_rollouts', 'N/A')}/{s.get('gradable_rollouts')}/{s.get('requested_rollouts')}",
                str(s.get("missing_rollouts", 0)),
            ]
        )
    if not srows:
        return []
    return [
        Table(
            ["side", "source", "problems", "correct/gradable/requested", "missing"],
            srows,
            left=2,
        )
    ]


def _movers_table(t: dict[str, Any]) -> list[Block]:
    """The (up to 5) problems that moved most, with their per-problem tests."""
    movers = [m for m in t.get("movers", []) if (m.get("delta") or 0) != 0][:5]
    if not movers:
        return []
    return [
        Table(
            ["problem that moved most", "baseline", "candidate", "delta", "p", "Holm p"],
            [
                [
                    m["id"],
                    _mover_side(m, "baseline"),
                    _mover_side(m, "candidate"),
                    s4(m.get("delta")),
                    _p(m.get("pvalue")),
                    _p(m.get("adjusted_pvalue")),
                ]
                for m in movers
            ],
            problems=[(t["task"], m["id"]) for m in movers],
        )
    ]


def _method_lines(t: dict[str, Any]) -> list[str]:
    """How the comparison was made: the procedure, its settings, the bounds, the power."""
    method = []
    if t.get("method"):
        method.append(t["method"])
    method.append(
        f"confidence {_num_g(t.get('confidence_level'))}, {t.get('n_resamples')} resamples, "
        f"seed {t.get('seed')}, se {f4(t.get('se'))}, direction {t.get('direction', 1):+d}, "
        f"problems {t.get('n_problems')}, dropped {t.get('n_dropped')}"
    )
    if t.get("bound_low") is not None or t.get("bound_high") is not None:
        method.append(f"bounds [{s4(t.get('bound_low'))}, {s4(t.get('bound_high'))}]")
    if t.get("power_note"):
        method.append(t["power_note"])
    return method


def _side_noise_row(role: str, s: dict[str, Any]) -> list[str]:
    m = s.get("measured")
    if m is None:
        figures = ["N/A (one run)" if s["n_runs"] < 2 else "N/A (not measurable)", "N/A", "N/A"]
    else:
        ratio = "N/A (no problem between 0 and 1)" if m["ratio"] is None else f"{m['ratio']:.2f}"
        figures = [ratio, _p(m["pvalue"]), f"{m['run_variance_upper']:.3g}"]
    return [role, s.get("source") or "none", str(s["n_runs"]), *figures, _p(s.get("variance"))]


def run_level_blocks(run_level: dict[str, Any] | None) -> list[Block]:
    """A comparison's run-level variance from replicate runs (``RunLevel.to_dict()``): per
    side the runs, the variance ratio and chi-square p-value of its own runs, the upper
    bound, the ``v`` used and its source; then the variance it adds to the effect."""
    if not run_level:
        return []
    level = None
    for role in ("baseline", "candidate"):
        m = run_level[role].get("measured")
        level = level or (m and m.get("confidence_level"))
    rows = [_side_noise_row(role, run_level[role]) for role in ("baseline", "candidate")]
    b, c = run_level["baseline"], run_level["candidate"]
    parts = " + ".join(f"{_p(s['variance'])}/{s['n_runs']}" for s in (b, c))
    return [
        Table(
            [
                "run level",
                "source of v",
                "runs",
                "variance ratio",
                "chi2 p",
                f"upper {_num_g(level) if level else '0.95'} v",
                "v used",
            ],
            rows,
            left=2,
        ),
        Para(
            f"run-level variance of the effect v_baseline/n_runs_baseline + v_candidate/n_runs_candidate "
            f"= {parts} = {run_level['run_variance']:.3g}"
        ),
    ]


def replicate_blocks(replicates: dict[str, Any] | None) -> list[Block]:
    """The runs of each side when replicate runs were given (``SideRuns.to_dict()`` by
    side): ``baseline: 3 runs (seeds 0, 1, 2): <label> with replicates b1, b2``."""
    if not replicates:
        return []
    lines = []
    for role in ("baseline", "candidate"):
        s = replicates[role]
        more = [r.rstrip("/").rsplit("/", 1)[-1] for r in s["runs"][1:]]
        tail = f" with replicates {', '.join(more)}" if more else ""
        lines.append(f"{role}: {s['summary']}: {s['label']}{tail}")
    return [Title("runs per side", 2), Bullets(lines)]


def changed_blocks(changed: dict[str, Any] | None) -> list[Block]:
    """The "what changed" block (``WhatChanged.to_dict()``): which recorded settings differ
    between the sides, one ``setting: baseline -> candidate`` line each, and (once) that this
    supports attribution, not proof of cause."""
    if not changed:
        return []
    b, c = changed["baseline"], changed["candidate"]
    out: list[Block] = [
        Title("what changed", 2),
        Para(f"baseline {b['label']}; candidate {c['label']}"),
    ]
    lines = [f"{ch['setting']}: {ch['baseline']} -> {ch['candidate']}" for ch in changed["changes"]]
    if not lines:
        out.append(Para(changed.get("summary") or "nothing changed in the recorded settings"))
        return out
    out.append(Bullets(lines))
    out.append(Para(f"({changed['note']})"))
    return out


def compare_doc(result: dict[str, Any]) -> list[Block]:
    """The blocks of a comparison (``CompareResult.to_dict()``)."""
    out: list[Block] = [
        Title(
            f"rolleval compare: {_words(result['verdict']).upper()} (exit {result['exit_code']}"
            f"{', --observe' if result.get('observe') else ''})",
            verdict=result["verdict"],
        ),
        *side_incomplete_warnings(result),
        Para(
            f"metric {result['metric']}; unit {result.get('unit', 'problem')}; "
            f"{result.get('multiplicity', '')}; baseline {result['baseline']}; candidate {result['candidate']}"
        ),
    ]
    rows = []
    for t in result["tasks"]:
        rows.append(
            [
                t["task"],
                _words(t["verdict"]),
                s4(t.get("effect")),
                f"[{s4(t.get('ci_low'))}, {s4(t.get('ci_high'))}]",
                f"±{_num_g(t.get('threshold'))}",
                _p(t.get("pvalue")),
                _p(result.get("adjusted_pvalues", {}).get(t["task"])),
                f4(t.get("mde")),
                f"{t['problems']['compared']}/{t['problems']['compared'] + t['problems']['dropped_total']}",
                str(t["exit_code"]),
            ]
        )
    if rows:
        out.append(
            Table(
                [
                    "task",
                    "verdict",
                    "effect",
                    "CI",
                    "threshold",
                    "p",
                    "Holm p",
                    "MDE",
                    "compared",
                    "exit",
                ],
                rows,
                left=2,
            )
        )
    for task, why in result.get("skipped_tasks", {}).items():
        out.append(Para(f"task {task}: skipped ({why})"))
    out += changed_blocks(result.get("what_changed"))
    out += replicate_blocks(result.get("replicates"))
    for t in result["tasks"]:
        out += comparison_blocks(t, adjusted=result.get("adjusted_verdicts", {}).get(t["task"]))
    notes = [f"timeouts: {result.get('timeouts', 'counted as failures')}"]
    notes += [f"note: {r}" for r in result.get("reasons", [])]
    out.append(Bullets(notes))
    out.append(
        Para(
            f"overall verdict: {_words(result['verdict'])} (exit {result['exit_code']}"
            f"{', --observe' if result.get('observe') else ''})"
        )
    )
    return out


# --------------------------------------------------------------------------- gate


def gate_doc(outcome: dict[str, Any]) -> list[Block]:
    """The blocks of a gate outcome (``GateResult.to_dict()``)."""
    out: list[Block] = [
        Title(
            f"rolleval gate: {_words(outcome['verdict']).upper()} (exit {outcome['exit_code']}"
            f"{', --observe' if outcome.get('observe') else ''})",
            verdict=outcome["verdict"],
        ),
        *side_incomplete_warnings(outcome),
        Para(outcome.get("multiplicity", "")),
    ]
    if outcome.get("run_variance_source"):
        out.append(Para(f"run-level variance of pass@1: {outcome['run_variance_source']}"))
    rows = [
        [
            c["task"],
            c["check"],
            str(c["value"]),
            _words(str(c["verdict"])),
            _p(c.get("adjusted_pvalue")),
        ]
        for c in outcome["checks"]
    ]
    out.append(Table(["task", "check", "value", "verdict", "Holm p"], rows, left=4))
    out += changed_blocks(outcome.get("what_changed"))
    out += replicate_blocks(outcome.get("replicates"))
    for t in outcome.get("comparisons", []):
        out += comparison_blocks(t)
    notes = [f"note: {r}" for r in outcome.get("reasons", [])]
    if notes:
        out.append(Bullets(notes))
    return out
