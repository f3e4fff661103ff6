from __future__ import annotations

import os

import click
import orjson

from ..sanitize import terminal_safe
from ..store import atomic_write_json
from ._app import cli


def _fmt(v: float | None, signed: bool = True) -> str:
    if v is None:
        return "N/A"
    return f"{v:+.4f}" if signed else f"{v:.4f}"


def render_compare(result: dict) -> str:
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


@cli.command("compare")
@click.argument("baseline", type=click.Path(path_type=str))
@click.argument("candidate", type=click.Path(path_type=str))
@click.option(
    "--metric",
    default="pass@1",
    show_default=True,
    help="Any metric key a report prints (pass@1, pass@K, pass^K, G-Pass@K_TAU, mG-Pass@K, consecutive-pass^K, maj@n, self_consistency) or a health metric (unextracted_rate, truncation_rate, infra_error_rate, timeout_rate, grader_error_rate, output_tokens).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=None,
    help="Practical threshold, absolute on the metric's scale [0.02 for rates].",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="Power of the minimum detectable effect; equivalence needs that MDE <= threshold.",
)
@click.option(
    "--confidence-level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Of the interval [1 - alpha].",
)
@click.option("--n-resamples", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--task", "tasks", multiple=True, help="Compare only this task (repeatable).")
@click.option(
    "--unmatched",
    type=click.Choice(["error", "exclude"]),
    default="error",
    show_default=True,
    help="Problems that changed or exist on one side only: refuse, or compare the shared unchanged ones.",
)
@click.option(
    "--require-provenance",
    is_flag=True,
    help="Refuse runs without content hashes instead of aligning by id.",
)
@click.option(
    "--observe",
    is_flag=True,
    help="Exit 0 for every evaluated comparison (input errors still exit 2).",
)
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Give a verdict on an unfinished run (otherwise exit 4: resume it first); the result carries the missing counts.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the full result as JSON.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the result as a self-contained HTML page.",
)
def compare_cmd(
    html_path: str | None,
    baseline: str,
    candidate: str,
    metric: str,
    threshold: float | None,
    alpha: float,
    power: float,
    confidence_level: float | None,
    n_resamples: int,
    seed: int,
    tasks: tuple[str, ...],
    unmatched: str,
    require_provenance: bool,
    observe: bool,
    allow_incomplete: bool,
    output: str | None,
    fmt: str,
) -> int:
    """Compare CANDIDATE with BASELINE problem by problem and give a verdict.

    BASELINE is a run directory or a baseline file (`rolleval baseline save`). Exit 0:
    no regression (improvement, equivalent, or a significant change below the threshold);
    1: regression; 3: inconclusive, not enough evidence, or a baseline task missing from the
    candidate; 2: the runs cannot be compared; 4: a run is incomplete (resume it).
    """
    from ..compare import compare_runs

    res = compare_runs(
        baseline,
        candidate,
        metric=metric,
        threshold=threshold,
        alpha=alpha,
        power=power,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=seed,
        tasks=list(tasks) or None,
        unmatched=unmatched,
        require_provenance=require_provenance,
        observe=observe,
        allow_incomplete=allow_incomplete,  # type: ignore[arg-type]
    )
    data = res.to_dict()
    if output:
        if os.path.dirname(output):
            os.makedirs(os.path.dirname(output), exist_ok=True)
        atomic_write_json(output, data)
    if fmt == "json":
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(terminal_safe(render_compare(data)))
    if html_path:
        from ..html import compare_html, write_html

        click.echo(f"HTML report: {write_html(html_path, compare_html(data))}")
    return res.exit_code
