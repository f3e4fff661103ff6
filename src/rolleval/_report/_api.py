"""The Python API behind ``rolleval report``: a run's report recomputed from its records.

The function does everything its CLI command does; the CLI only parses flags and prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import RunReport
from ..rundir._lock import hold_run_lock
from ..rundir._store import RunDir
from ._build import InferenceSettings, build_run_report, write_run_report

__all__ = ["ReportResult", "report_run"]


@dataclass(frozen=True)
class ReportResult:
    """What :func:`report_run` computed and where it wrote it."""

    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None


def report_run(
    run: str | os.PathLike[str] | RunDir,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    rng: int = 0,
    write: bool = True,
    task_reports: dict[str, dict[str, Any]] | None = None,
) -> ReportResult:
    """Recompute a run's report from its stored judgements (zero model calls).

    ``rng`` is the bootstrap's seed (an int: it is recorded in the report as ``seed``; the
    CLI's ``--seed``). ``task_reports``: reports of tasks whose records a writer still holds
    in memory (:func:`rolleval.report.task_report_of_columns`), used instead of re-reading
    those tasks when computed with the same settings.

    Writes ``report.json`` (run level) and each task's ``report.json`` atomically unless
    ``write`` is false, holding the run's write lock while it reads and writes. The same run directory and settings always give the same bytes.
    """
    rd = run if isinstance(run, RunDir) else RunDir.open(run)
    inference = InferenceSettings(
        n_resamples=n_resamples, confidence_level=confidence_level, rng=rng
    )
    if not write:
        report, warns = build_run_report(rd, inference=inference, task_reports=task_reports)
        return ReportResult(report, warns, None)
    notes: list[str] = []
    with hold_run_lock(rd.path, command="report", on_note=notes.append):
        report, warns = build_run_report(rd, inference=inference, task_reports=task_reports)
        RunReport.model_validate(report)  # the envelope written is the model's
        write_run_report(rd, report)
    return ReportResult(report, notes + warns, rd.report_path)
