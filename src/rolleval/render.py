"""Plain-text renderers for reports (the JSON form is the report itself)."""

from __future__ import annotations

from typing import Any

__all__ = ["fmt_num", "render_run_report", "render_task_report"]


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
