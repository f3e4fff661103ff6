"""Text and Markdown renderers of the report model (:mod:`rolleval._report._document`).

``render(kind, data, fmt)`` is the one entry point of ``report``, ``compare`` and ``gate``:
``kind`` is ``run``, ``compare`` (a sequential run's comparison too, by its ``design``),
``gate`` or ``drift``; ``fmt`` is ``text`` (a terminal view that fits
100 columns, coloured only on a terminal and never under ``NO_COLOR``), ``json`` (the result
itself), ``md`` (GitHub-flavoured Markdown for a pull-request comment) or ``github`` (the
Markdown, also appended to ``$GITHUB_STEP_SUMMARY`` when set). Every string that may come
from data (problem ids, paths, reasons) is made inert: control sequences are removed.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Callable
from typing import Any, TextIO

import orjson

from .._sanitize import terminal_safe
from ._document import (
    Block,
    Bullets,
    Details,
    Para,
    Table,
    Title,
    compare_doc,
    gate_doc,
    run_doc,
    task_blocks,
)
from ._drift import drift_doc
from ._formats import FORMATS
from ._seqdoc import is_sequential, sequential_compare_doc

__all__ = [
    "FORMATS",
    "WIDTH",
    "emit",
    "fmt_num",
    "render",
    "render_compare",
    "render_plan",
    "render_run_report",
    "render_task_report",
    "to_markdown",
    "to_text",
    "use_color",
    "write_step_summary",
]

WIDTH = 100

_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")


def fmt_num(v: float | None, digits: int = 4) -> str:
    return "N/A" if v is None else f"{v:.{digits}f}"


def use_color(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (any value)."""
    if "NO_COLOR" in os.environ:
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


_BAD = {"regression", "blocked", "run_failed", "failed", "above_threshold"}
_GOOD = {
    "pass",
    "improvement",
    "equivalent_within_threshold",
    "significant_below_threshold",
    "ok",
    "within_threshold",
}


def _badge(verdict: str, color: bool) -> str:
    word = verdict.replace("_", " ").upper()
    if not color:
        return word
    code = "31" if verdict in _BAD else "32" if verdict in _GOOD else "33"
    return f"\x1b[1;{code}m{word}\x1b[0m"


# --------------------------------------------------------------------------- text


def _wrap(text: str, width: int, indent: str = "", sub: str | None = None) -> list[str]:
    return textwrap.wrap(
        terminal_safe(text, strip=True),
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  " if sub is None else sub,
        break_on_hyphens=False,
    ) or [indent]


def _text_table(t: Table, width: int, indent: str) -> list[str]:
    cells = [[terminal_safe(c, strip=True) for c in row] for row in t.rows]
    widths = [len(c) for c in t.columns]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    total = len(indent) + sum(widths) + 2 * (len(widths) - 1)
    if total > width:
        # too wide: one entry per row, "column value" pairs wrapped
        out = []
        for row in cells:
            head = f"{row[0]}: " + "; ".join(
                f"{col} {c}" for col, c in zip(t.columns[1:], row[1:]) if c
            )
            out += _wrap(head, width, indent, indent + "    ")
        return out

    def line(row: list[str]) -> str:
        parts = [
            c.ljust(w) if i < t.left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        ]
        return (indent + "  ".join(parts)).rstrip()

    return [line(list(t.columns))] + [line(r) for r in cells]


def to_text(blocks: list[Block], *, width: int = WIDTH, color: bool = False) -> str:
    """Lay blocks out for a terminal ``width`` columns wide."""
    lines: list[str] = []
    indent = ""

    def emit(bs: list[Block]) -> None:
        nonlocal indent
        for b in bs:
            if isinstance(b, Title):
                if b.level > 1 or lines:
                    lines.append("")
                text = terminal_safe(b.text, strip=True)
                if b.verdict:
                    lines.extend(_wrap(text, width))
                    lines.append(f"  verdict: {_badge(b.verdict, color)}")
                else:
                    lines.extend(_wrap(text, width))
                indent = "  "
            elif isinstance(b, Para):
                lines.extend(_wrap(b.text, width, indent))
            elif isinstance(b, Bullets):
                for item in b.items:
                    lines.extend(_wrap(f"- {item}", width, indent, indent + "  "))
            elif isinstance(b, Table):
                lines.extend(_text_table(b, width, indent))
            elif isinstance(b, Details):
                lines.extend(_wrap(f"{b.summary}:", width, indent))
                for sub in b.blocks:
                    if isinstance(sub, Para):
                        lines.extend(_wrap(sub.text, width, indent + "  "))
                    else:
                        emit([sub])

    emit(blocks)
    return "\n".join(lines)


# --------------------------------------------------------------------------- markdown


def _md(s: str) -> str:
    # a "<" that could open an HTML tag or comment is escaped; "<=" stays readable
    return _TAG_OPEN.sub("&lt;", terminal_safe(s, strip=True)).replace("|", "\\|")


def _md_table(t: Table) -> list[str]:
    head = "| " + " | ".join(_md(c) for c in t.columns) + " |"
    sep = "|" + "|".join(":---" if i < t.left else "---:" for i in range(len(t.columns))) + "|"
    rows = ["| " + " | ".join(_md(c) for c in row) + " |" for row in t.rows]
    return [head, sep, *rows]


def to_markdown(blocks: list[Block]) -> str:
    """GitHub-flavoured Markdown (tables, ``<details>``), safe to post as a PR comment."""
    out: list[str] = []

    def emit(bs: list[Block]) -> None:
        for b in bs:
            if isinstance(b, Title):
                badge = ""
                if b.verdict:
                    mark = (
                        ":x:"
                        if b.verdict in _BAD
                        else ":white_check_mark:"
                        if b.verdict in _GOOD
                        else ":warning:"
                    )
                    badge = f"{mark} "
                out.append(f"{'#' * (b.level + 1)} {badge}{_md(b.text)}")
                if b.verdict and b.level > 1:
                    out.append("")
                    out.append(f"**{_md(b.verdict.replace('_', ' '))}**")
                out.append("")
            elif isinstance(b, Para):
                out.extend([_md(b.text), ""])
            elif isinstance(b, Bullets):
                out.extend([f"- {_md(i)}" for i in b.items] + [""])
            elif isinstance(b, Table):
                out.extend([*_md_table(b), ""])
            elif isinstance(b, Details):
                out.extend(["<details>", f"<summary>{_md(b.summary)}</summary>", ""])
                emit(b.blocks)
                out.extend(["</details>", ""])

    emit(blocks)
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- entry points

_DOCS: dict[str, Callable[[dict[str, Any]], list[Block]]] = {
    "run": run_doc,
    "compare": compare_doc,
    "gate": gate_doc,
    "drift": drift_doc,
}


def render(
    kind: str, data: dict[str, Any], fmt: str, *, color: bool = False, all_metrics: bool = False
) -> str:
    """``data`` (a run report, comparison or gate outcome) in the format ``fmt``.

    A run report's text shows the compact metric table (pass@1, pass@k, pass^k) unless
    ``all_metrics``; Markdown adds every metric in a collapsible section."""
    if fmt == "json":
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    if kind == "run":
        blocks = run_doc(
            data, all_metrics=True if all_metrics else (False if fmt == "text" else None)
        )
    elif kind == "compare" and is_sequential(data):
        blocks = sequential_compare_doc(data)
    else:
        blocks = _DOCS[kind](data)
    if fmt == "text":
        return to_text(blocks, color=color)
    if fmt in ("md", "github"):
        return to_markdown(blocks)
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def write_step_summary(markdown: str) -> str | None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` when it is set; return its path."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(markdown + "\n")
    return path


def render_task_report(rep: dict[str, Any], *, all_metrics: bool = False) -> str:
    return to_text(task_blocks(rep, all_metrics=all_metrics))


def render_run_report(
    report: dict[str, Any], *, color: bool = False, all_metrics: bool = False
) -> str:
    return render("run", report, "text", color=color, all_metrics=all_metrics)


def render_compare(result: dict[str, Any], *, color: bool = False) -> str:
    return render("compare", result, "text", color=color)


def emit(
    kind: str,
    data: dict[str, Any],
    fmt: str,
    *,
    stream: TextIO | None = None,
    all_metrics: bool = False,
) -> str:
    """What ``report``/``compare``/``gate`` print for ``fmt``: rendered (coloured only when
    ``stream`` is a terminal), and under ``github`` also appended to ``$GITHUB_STEP_SUMMARY``."""
    out = render(
        kind, data, fmt, color=fmt == "text" and use_color(stream), all_metrics=all_metrics
    )
    if fmt == "github":
        write_step_summary(out)
    return out.rstrip("\n")


def render_plan(res: dict[str, Any]) -> str:
    """Text form of :func:`rolleval.compare.plan_runs`'s result."""
    run_level = any("v" in (t.get("run_level") or {}) for t in res["tasks"].values())
    how = (
        "with the run-level variance: see each task's run-level line"
        if run_level
        else "normal approximation, and a simulation of compare's rule at 100 problems or fewer"
    )
    lines = [
        f"rolleval plan: the regression verdict at a true pass@1 drop of {res['effect']:g} "
        f"against the threshold {res['threshold']:g}, with power {res['power']:g} at alpha "
        f"{res['alpha']:g} (paired over problems; {how})"
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
        lines += _run_level_lines(e.get("run_level"))
        if e["required_problems"] is None:
            why = f"({e['reason']})" if e.get("reason") else "(see NOTE)"
            lines.append(f"  problems needed for the regression verdict: none is enough {why}")
        else:
            lines.append(
                f"  problems needed for the regression verdict at the current rollouts per "
                f"problem: {e['required_problems']} (for significance alone: "
                f"{e['required_problems_significance']})"
            )
            lines.append(_planned_power_line(e))
            r = e["required_rollouts_at_current_problems"]
            lines.append(
                f"  rollouts per problem needed at {e['problems']} problems: "
                + (
                    str(r)
                    if r is not None
                    else f"N/A ({e['rollouts_reason']})"
                    if e.get("rollouts_reason")
                    else "unreachable by rollouts alone (between-problem variance)"
                )
            )
        seq = e.get("sequential")
        if seq is not None:
            shares = ", ".join(f"{v} {share:.2f}" for v, share in seq["verdicts"].items())
            lines.append(
                f"  sequential (run --until-decided, simulated {seq['sims']} times, budget "
                f"{seq['budget']} problems, a look every {seq['round_problems']}): "
                f"{seq['mean_problems']:.1f} problems to a verdict on average, 90th percentile "
                f"{seq['p90_problems']:.0f}; the fixed design uses {seq['budget']} (and needs "
                + (
                    "no size is enough"
                    if e["required_problems"] is None
                    else f"{e['required_problems']} for {round(100 * res['power'])}% power"
                )
                + f"); verdicts: {shares}; simulated mean drop {seq['implied_drop']:.4f}"
            )
        lines.append(_equivalence_line(e, res))
    for name in res.get("missing_tasks") or []:
        lines.append(
            f"\ntask {name}: in the pilot, not in the candidate: N/A (nothing to pair it with)"
        )
    return "\n".join(_fit(line) for line in lines)


def _run_level_lines(rl: dict[str, Any] | None) -> list[str]:
    """A plan's run-level part (``TaskPlan.run_level``): v, runs per side, the reference."""
    if not rl:
        return []
    if "v" not in rl:
        return [f"  run level: {rl['note']}"]
    df = rl.get("df_at_required_problems")
    ref = "normal (v known)" if df is None else f"Student t, {df:.3g} Satterthwaite df"
    line = (
        f"  run level: v = {rl['v']:.3g} per run, {rl['runs_per_side']} run(s) per side: the "
        f"effect's variance gains {rl['formula']} = {rl['run_variance']:.3g}; reference {ref}"
    )
    return [line + (f"; {rl['note']}" if rl.get("note") else "")]


def _planned_power_line(e: dict[str, Any]) -> str:
    """The predicted chance of the verdict at the planned size, and how it was found."""
    pp = e.get("power_planned") or {}
    if pp.get("power") is None:
        return "  predicted chance of the regression verdict at that size: N/A (no variance)"
    if pp.get("sims"):
        normal = e.get("required_problems_normal")
        return (
            f"  predicted chance of the regression verdict at {e['required_problems']} "
            f"problems: {pp['power']:.3f} (SE {pp['se']:.3f}, {pp['sims']} simulations of "
            f"compare's rule; the normal approximation said {normal} problems, optimistic "
            "at this size)"
        )
    return (
        f"  predicted chance of the regression verdict at {e['required_problems']} problems: "
        f"{pp['power']:.3f} ({pp.get('method') or 'normal approximation'})"
        + (f"; {pp['note']}" if pp.get("note") else "")
    )


def _fit(line: str) -> str:
    """A line of the plan wrapped to :data:`WIDTH` columns, continuation lines indented."""
    if len(line) <= WIDTH:
        return line
    lead = len(line) - len(line.lstrip("\n "))
    head = line[:lead]
    indent = " " * (len(head.lstrip("\n")) + 4)
    return "\n".join(
        textwrap.wrap(
            line[lead:],
            width=WIDTH,
            initial_indent=head,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )
    )


def _equivalence_line(e: dict[str, Any], res: dict[str, Any]) -> str:
    """What size would let compare say "equivalent" when nothing changed."""
    need = e.get("equivalence_problems")
    if need is None:
        return f"  problems needed for the equivalent verdict: N/A ({e.get('equivalence_reason', 'not planned')})"
    return (
        f"  problems needed for the equivalent verdict (no true change, minimum detectable effect at "
        f"most the threshold {res['threshold']:g}): {need} at the current rollouts per problem"
    )
