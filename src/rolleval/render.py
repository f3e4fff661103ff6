"""Plain-text renderers: run reports, comparisons and plans (the JSON form is the result itself)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "fmt_num",
    "render_compare",
    "render_plan",
    "render_run_report",
    "render_task_report",
]


def fmt_num(v: float | None, digits: int = 4) -> str:
    return "N/A" if v is None else f"{v:.{digits}f}"


def _fmt_count(x: float | None) -> str:
    if x is None:
        return "N/A"
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def render_task_report(rep: dict[str, Any]) -> str:
    lines: list[str] = []
    ro = rep["rollouts"]
    pr = rep["problems"]
    lines.append(
        f"task {rep.get('task')}  grader {rep.get('grader') or 'unknown'}  "
        f"policy {rep['denominator_policy']}  score {rep['score_key']}"
    )
    if rep.get("timeout_policy", "failure") == "failure":
        lines.append(
            "  timeouts count as failures in every metric (estimand: passes within budget)"
        )
    else:
        lines.append("  timeouts are excluded from the metrics, like infra errors")
    dist = ", ".join(
        f"{k}x{v}"
        for k, v in sorted(ro["gradable_per_problem"].items(), key=lambda kv: -int(kv[0]))
    )
    lines.append(
        f"  problems {pr['total']} ({pr['with_gradable_rollout']} with a gradable rollout); rollouts "
        f"requested {ro['requested']}, completed {ro['completed']}, gradable {ro['gradable']}, "
        f"correct {ro['correct']}; gradable per problem: {dist or 'none'}"
    )
    inf = rep["inference"]
    ci_head = f"{round(inf['confidence_level'] * 100)}% CI"
    lines.append(f"  {'metric':<26}{'value':>8}   {ci_head:<19}{'num/den':>16}")
    for name, m in rep["metrics"].items():
        if m["status"] != "ok":
            lines.append(f"  {name:<26}{'N/A':>8}   {m.get('reason') or ''}")
            continue
        ci = m.get("ci") or {}
        if ci.get("status") == "ok":
            ci_s = f"[{fmt_num(ci['low'])}, {fmt_num(ci['high'])}]"
        elif ci:
            ci_s = ci.get("reason", ci.get("status", ""))[:19]
        else:
            ci_s = ""
        numden = f"{_fmt_count(m['numerator'])}/{m['denominator']}"
        if m["denominator"] != m["n_total"]:
            numden += f" (of {m['n_total']})"
        lines.append(f"  {name:<26}{fmt_num(m['value']):>8}   {ci_s:<19}{numden:>16}")
    h = rep["health"]
    parts = []
    for key in (
        "n_unextracted",
        "n_truncated",
        "n_short",
        "infra_errors",
        "timeouts",
        "grader_errors",
        "missing",
    ):
        v = h[key]
        rate = "N/A" if v["rate"] is None else f"{100 * v['rate']:.1f}%"
        parts.append(f"{key} {v['count']}/{v['of']} ({rate})")
    lines.append("  health: " + "; ".join(parts))
    extra = []
    if h["duplicate_judgements"]:
        extra.append(f"{h['duplicate_judgements']} duplicate judgements ignored")
    if h["unexpected_indices"]:
        extra.append(f"{h['unexpected_indices']} rollouts beyond n ignored")
    if h["torn_lines"]:
        extra.append("torn last line ignored in " + ", ".join(h["torn_lines"]))
    if extra:
        lines.append("  notes: " + "; ".join(extra))
    return "\n".join(lines)


def render_run_report(report: dict[str, Any]) -> str:
    head = f"rolleval report  run {report.get('run_id') or '?'}  model {report.get('model') or '?'}"
    blocks = [head] + [render_task_report(rep) for rep in report["tasks"].values()]
    if not report["tasks"]:
        blocks.append("  (no tasks)")
    return "\n\n".join(blocks)


def _fmt(v: float | None, signed: bool = True) -> str:
    if v is None:
        return "N/A"
    return f"{v:+.4f}" if signed else f"{v:.4f}"


def render_compare(result: dict) -> str:
    """Text form of :func:`rolleval.compare.compare_runs`'s result (its ``to_dict()``)."""
    lines = [
        f"rolleval compare  metric {result['metric']}  (unit: problem, or cluster where a task declares clusters; Holm across tasks)"
    ]
    lines.append(f"  baseline  {result['baseline']}\n  candidate {result['candidate']}")
    for t in result["tasks"]:
        sides = t["sides"]
        al = t["alignment"]
        lines.append("")
        lines.append(
            f"task {t['task']}: {t['verdict'].replace('_', ' ').upper()}  (exit {t['exit_code']})"
        )
        adjusted = result.get("adjusted_verdicts", {}).get(t["task"])
        if adjusted and adjusted != t["verdict"]:
            lines.append(f"  after Holm across tasks: {adjusted.replace('_', ' ')}")
        lines.append(
            f"  effect {_fmt(t['effect'])} ({t['better']} is better; negative = candidate worse)  "
            f"{round(100 * t['confidence_level'])}% CI [{_fmt(t['ci_low'])}, {_fmt(t['ci_high'])}]  "
            f"p={t['pvalue']:.4g}{' (exact)' if t.get('pvalue_exact') else ''}  threshold ±{t['threshold']}"
            if t.get("effect") is not None and t.get("pvalue") is not None
            else f"  {t.get('reason') or 'no estimate'}"
        )
        if t.get("effect") is not None and t["verdict"] in (
            "insufficient_evidence",
            "inconclusive",
        ):
            lines.append(f"  why: {t['reason']}")
        if t.get("ci_status") == "degenerate":
            lines.append("  interval: degenerate (every paired difference is equal: zero width)")
        if t.get("method"):
            lines.append(
                f"  method: {t['method']}; confidence {t['confidence_level']:g}, seed {t['seed']}"
            )
        b, c = sides["baseline"], sides["candidate"]
        pr = t["problems"]
        lines.append(
            f"  problems compared {pr['compared']} of {pr['compared'] + pr['dropped_total']} "
            f"(matched {al['matched']} by {al['by'].replace('_', ' ')}; dropped {pr['dropped_total']}); "
            f"gradable rollouts {b['gradable_rollouts']}/{b['requested_rollouts']} baseline, "
            f"{c['gradable_rollouts']}/{c['requested_rollouts']} candidate"
        )
        for reason, ex in pr["dropped"].items():
            lines.append(
                f"  dropped {ex['count']} {reason.replace('_', ' ')}: {', '.join(ex['ids'][:5])}{' ...' if ex['count'] > 5 else ''}"
            )
        for w in t.get("warnings", []):
            lines.append(f"  WARNING: {w}")
        for side in ("baseline", "candidate"):
            if sides[side].get("missing_rollouts"):
                lines.append(
                    f"  WARNING: the {side} is incomplete: {sides[side]['missing_rollouts']} rollouts missing "
                    f"(status {sides[side].get('run_status')!r})"
                )
        uj = t.get("unjudged") or {}
        if uj.get("bound_checked"):
            wc = uj.get("worst_case")
            lines.append(
                f"  unjudged rollouts {uj['baseline_share']:.1%} baseline, {uj['candidate_share']:.1%} candidate: "
                + (
                    f"worst case ({wc['fill']}) gives {wc['verdict'].replace('_', ' ')}, effect {_fmt(wc['effect'])}"
                    if wc
                    else "no worst-case bound for this metric"
                )
            )
        for note in al["notes"]:
            lines.append(f"  note: {note}")
        if t.get("mde") is not None:
            more = ""
            if t.get("needed_problems") is not None or t.get("needed_rollouts") is not None:
                more = f"; to decide: ~{t.get('needed_problems') or 'N/A'} problems, or {t.get('needed_rollouts') or 'N/A'} rollouts per problem"
            lines.append(
                f"  minimum detectable effect ({round(100 * t['power'])}% power): {t['mde']:.4f}{more}"
            )
        if t.get("power_note"):
            lines.append(f"  {t['power_note']}")
        health = ", ".join(
            f"{k} {_fmt(v['baseline'], False)}->{_fmt(v['candidate'], False)}"
            for k, v in t["health"].items()
            if k != "output_tokens"
        )
        tok = t["health"].get("output_tokens", {})
        lines.append(
            f"  health: {health}; output_tokens {tok.get('baseline') and round(tok['baseline'], 1)}->{tok.get('candidate') and round(tok['candidate'], 1)}"
        )
        sc = t.get("self_consistency")
        if sc:
            lines.append(
                f"  self-consistency: effect {_fmt(sc['effect'])} [{_fmt(sc['ci_low'])}, {_fmt(sc['ci_high'])}] ({sc['verdict'].replace('_', ' ')}; not gating)"
            )
        movers = [m for m in t["movers"] if (m.get("delta") or 0) != 0][:5]
        if movers:
            lines.append(
                "  problems that moved most (rate baseline -> candidate, Holm-adjusted one-sided p):"
            )
            for m in movers:
                p = m.get("adjusted_pvalue")
                p_s = "N/A" if p is None else f"{p:.3g}"
                lines.append(
                    f"    {m['id']}: {m['baseline_rate']:.2f} -> {m['candidate_rate']:.2f}  p_holm={p_s}"
                )
    for task, why in result.get("skipped_tasks", {}).items():
        lines.append(f"\ntask {task}: skipped ({why})")
    lines.append("")
    lines.append(f"timeouts: {result.get('timeouts', 'counted as failures')}")
    for why in result.get("reasons", []):
        lines.append(f"note: {why}")
    lines.append(
        f"overall verdict: {result['verdict'].replace('_', ' ').upper()} (exit {result['exit_code']}{', --observe' if result.get('observe') else ''})"
    )
    return "\n".join(lines)


def render_plan(res: dict) -> str:
    """Text form of :func:`rolleval.compare.plan_runs`'s result."""
    lines = [
        f"rolleval plan: the regression verdict at a true pass@1 drop of {res['effect']:g} "
        f"against the threshold {res['threshold']:g}, with power {res['power']:g} at alpha "
        f"{res['alpha']:g} (paired over problems, normal approximation)"
    ]
    if res.get("note"):
        lines.append(f"  NOTE: {res['note']}")
    for name, e in res["tasks"].items():
        lines.append(f"\ntask {name}: {e['problems']} problems in the pilot; {e['assumption']}")
        if e["status"] != "ok":
            lines.append(f"  N/A: {e['reason']}")
            continue
        power_now = e.get("regression_power_current")
        lines.append(
            f"  current design: minimum detectable effect {e['mde_current']:.4f} "
            f"(significance, {round(100 * res['power'])}% power); chance of the regression "
            f"verdict at a drop of {res['effect']:g}: "
            + ("N/A (no variance)" if power_now is None else f"{power_now:.2f}")
        )
        if e["required_problems"] is None:
            lines.append("  problems needed for the regression verdict: none is enough (see NOTE)")
        else:
            lines.append(
                f"  problems needed for the regression verdict at the current rollouts per "
                f"problem: {e['required_problems']} (for significance alone: "
                f"{e['required_problems_significance']})"
            )
            r = e["required_rollouts_at_current_problems"]
            lines.append(
                f"  rollouts per problem needed at {e['problems']} problems: "
                + (
                    "unreachable by rollouts alone (between-problem variance)"
                    if r is None
                    else str(r)
                )
            )
    return "\n".join(lines)
