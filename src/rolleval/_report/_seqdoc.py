"""The report model of a sequential comparison (``rolleval compare BASE CAND`` where CAND is
a ``run --until-decided`` run): the blocks of ``SequentialCompareResult.to_dict()``.

The text, Markdown and HTML renderers lay these blocks out like a fixed-design comparison's
(:func:`rolleval._report._document.compare_doc`): the verdict and exit code, the design
(method, alpha, threshold, order seed, rounds, budget), per task where it stopped, why, and
every look of its confidence sequence, and what changed between the two sides. No
fixed-sample interval, p-value or minimum detectable effect is shown: they do not hold after
optional stopping.
"""

from __future__ import annotations

from typing import Any

from ..compare._rule import verdict_exit_code
from ._document import (
    Block,
    Bullets,
    Details,
    Para,
    Table,
    Title,
    changed_blocks,
    looks_table,
    s4,
)

__all__ = ["ANYTIME_NOTE", "is_sequential", "sequential_compare_doc", "sequential_design_line"]

#: Why a sequential comparison shows no fixed-sample interval, p-value or MDE.
ANYTIME_NOTE = (
    "the confidence sequence is anytime-valid: its bounds hold at every look at once, so the "
    "verdict holds wherever the run stopped; a fixed-sample interval, p-value and minimum "
    "detectable effect are not shown because they do not hold after optional stopping"
)


def is_sequential(result: dict[str, Any]) -> bool:
    """Whether a comparison's JSON is a sequential run's (``design`` is ``sequential``)."""
    return result.get("design") == "sequential"


def _words(v: str) -> str:
    return v.replace("_", " ")


def _method(result: dict[str, Any]) -> str:
    """The sequence's method without the ``sequential:`` prefix of compare's ``method``."""
    method = str(result.get("method") or "")
    head, sep, rest = method.partition(": ")
    return rest if sep and head == "sequential" else method


def sequential_design_line(result: dict[str, Any]) -> str:
    """``design sequential: <method>; metric pass@1; alpha 0.05 (...); threshold ±0.02;
    order seed 5; rounds of 10 problems; budget 500 problems per task``."""
    return (
        f"design sequential: {_method(result)}; metric {result['metric']}; alpha "
        f"{result['alpha']:g} ({result['multiplicity']}); threshold ±{result['threshold']:g}; "
        f"order seed {result['order_seed']}; rounds of {result['round_problems']} problems; "
        f"budget {result['max_problems']} problems per task"
    )


def _task_rows(result: dict[str, Any]) -> list[list[str]]:
    """One summary row per task: verdict, problems used, looks, last effect and bounds."""
    rows = []
    for t in result["tasks"]:
        last = (t.get("sequence") or [{}])[-1]
        used = t["stopped_after"] if t["stopped_after"] is not None else last.get("problems", 0)
        rows.append(
            [
                t["task"],
                _words(t["verdict"]),
                f"{used}/{t['budget']}",
                str(t["looks"]),
                s4(last.get("effect")),
                f"[{s4(t.get('ci_low'))}, {s4(t.get('ci_high'))}]",
                f"{t['alpha']:g}",
                str(verdict_exit_code(t["verdict"])),
            ]
        )
    return rows


def _task_blocks(t: dict[str, Any], metric: str, *, collapse_looks: bool) -> list[Block]:
    """One task: its verdict, where and why it stopped, and every look."""
    n = len(t.get("sequence") or [])
    table = looks_table(t.get("sequence") or [])
    out: list[Block] = [
        Title(f"task {t['task']}: {metric}", 2, verdict=t["verdict"]),
        Para(t["summary"]),
        Para(f"why it stopped: {t.get('reason') or 'the run stopped before a verdict'}"),
        Para(f"this task's sequence is at alpha {t['alpha']:g} (each look: lower, upper)"),
    ]
    if collapse_looks:
        out.append(Details(f"every look ({n}) of the confidence sequence", [table]))
    else:
        out += [Title(f"every look ({n}) of the confidence sequence", 3), table]
    return out


def _headline(result: dict[str, Any]) -> str:
    return (
        f"{_words(result['verdict']).upper()} (exit {result['exit_code']}"
        f"{', --observe' if result.get('observe') else ''})"
    )


def sequential_compare_doc(result: dict[str, Any], *, collapse_looks: bool = True) -> list[Block]:
    """The blocks of a sequential comparison (``SequentialCompareResult.to_dict()``);
    ``collapse_looks``: each task's look table in a collapsible section (text shows it
    anyway; the HTML page shows it open beside the chart)."""
    out: list[Block] = [
        Title(f"rolleval compare (sequential): {_headline(result)}", verdict=result["verdict"]),
        Para(sequential_design_line(result)),
        Para(f"baseline {result['baseline']}; candidate {result['candidate']}"),
        Table(
            [
                "task",
                "verdict",
                "problems used",
                "looks",
                "effect",
                "sequence",
                "alpha",
                "exit",
            ],
            _task_rows(result),
            left=2,
        ),
    ]
    out += changed_blocks(result.get("what_changed"))
    for t in result["tasks"]:
        out += _task_blocks(t, result["metric"], collapse_looks=collapse_looks)
    notes = [
        ANYTIME_NOTE,
        "effect: the mean paired difference of pass@1 (candidate - baseline) over the visited "
        "problems gradable on both sides; lower, upper: the running intersection of the "
        "confidence sequence on it",
        "the verdicts were replayed from both runs' judgements at the recorded looks and equal "
        "the recorded ones",
    ]
    if result.get("stopping_reason"):
        notes.append(f"the run's stopping reason: {result['stopping_reason']}")
    out.append(Bullets(notes))
    out.append(Para(f"overall verdict: {_headline(result).lower()}"))
    return out
