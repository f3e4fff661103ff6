"""TraceLens ``tracelens run --save-trials`` files.

One trials file is one run of one eval set: the eval set becomes one rolleval task, each
TraceLens task one problem, each trial (``run_index``) one rollout. A trial passes when it
has at least one outcome and every outcome passed (TraceLens's own rule); a grader crash in
any outcome is a ``grader_error``. Problems carry TraceLens's per-task content hash
(``provenance.measurement.task_hashes``) so two imports align by content, as
``tracelens compare`` does; the task input itself is not in the file (no prompt).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from ..records import JudgementRecord, RolloutRecord, RolloutStatus
from ._base import (
    ImportedRun,
    ImportedTask,
    Unmapped,
    as_float,
    check_unique,
    make_prompt,
    source_error,
)
from ._io import head_bytes, read_json_file

__all__ = ["TraceLensReader"]

# TraceLens trial status -> rolleval rollout status.
STATUSES: dict[str, RolloutStatus] = {
    "completed": "ok",
    "failed": "ok",  # an agent failure is a model failure: judged by its outcomes (none = fail)
    "timeout": "timeout",
    "infra_error": "infra_error",
    "skipped": "skipped",
    "pending": "skipped",
    "running": "skipped",
}
_KNOWN_TRIAL = {
    "trial_id",
    "task_id",
    "run_index",
    "total_runs",
    "attempts",
    "status",
    "transcript",
    "outcomes",
    "started_at",
    "completed_at",
    "error_message",
    "error_traceback",
    "metadata",
}


class TraceLensReader:
    name = "tracelens"

    def looks_like(self, path: Path) -> bool:
        if not path.is_file():
            return False
        head = head_bytes(path)
        return b'"trials"' in head and (b'"batch_id"' in head or b'"trial_id"' in head)

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        if path.is_dir():
            raise source_error(
                path, "a TraceLens source is one trials file", "pass the --save-trials JSON file"
            )
        data = read_json_file(path, what="TraceLens trials file")
        if not isinstance(data, dict) or not isinstance(data.get("trials"), list):
            raise source_error(
                path,
                "not a TraceLens trials file (no 'trials' list)",
                "pass the file written by `tracelens run --save-trials`; an aggregate results file has no per-trial data",
            )
        raw_prov = data.get("provenance")
        prov: dict[str, Any] = raw_prov if isinstance(raw_prov, dict) else {}
        measurement = prov.get("measurement") or {}
        name = str(measurement.get("eval_set_name") or _unnamed_set(data["trials"]))
        model = None
        candidate = prov.get("candidate") or {}
        adapter = candidate.get("adapter") or {}
        if adapter:
            model = adapter.get("name") or adapter.get("class_path")
        task = _task(path, data, name, measurement)
        provenance = {
            "harness": "tracelens",
            "harness_version": prov.get("tracelens_version"),
            "batch_id": data.get("batch_id"),
            "started_at": data.get("started_at"),
            "completed_at": data.get("completed_at"),
            "provenance": prov or None,
        }
        return ImportedRun(self.name, path, model, provenance, iter([task]))


def _unnamed_set(trials: list[Any]) -> str:
    """The name of an eval set a file without provenance does not name: from its task ids,
    which is how TraceLens compares such files, so two files of one eval set share it (the
    file name would differ between them)."""
    ids = sorted(
        {t["task_id"] for t in trials if isinstance(t, dict) and isinstance(t.get("task_id"), str)}
    )
    digest = hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:12]
    return f"tracelens-{digest}"


def _task(path: Path, data: dict[str, Any], name: str, measurement: dict[str, Any]) -> ImportedTask:
    unmapped = Unmapped()
    hashes = measurement.get("task_hashes") or {}
    trials = data["trials"]
    seen: set[tuple[str, int]] = set()
    by_task: dict[str, list[dict[str, Any]]] = {}
    for i, trial in enumerate(trials):
        if not isinstance(trial, dict) or not isinstance(trial.get("task_id"), str):
            raise source_error(
                path, f"trial {i} has no 'task_id' string", "the trials file is corrupt; re-save it"
            )
        run_index = trial.get("run_index")
        if not isinstance(run_index, int) or isinstance(run_index, bool) or run_index < 0:
            raise source_error(
                path,
                f"trial {i} (task {trial['task_id']!r}) has no valid 'run_index'",
                "the trials file is corrupt; re-save it",
            )
        status = trial.get("status")
        if status not in STATUSES:
            raise source_error(
                path,
                f"trial {i} (task {trial['task_id']!r}) has unknown status {status!r}",
                f"expected one of {', '.join(STATUSES)}",
            )
        check_unique(
            seen, (trial["task_id"], run_index), path=path, what="trial (task_id, run_index)"
        )
        by_task.setdefault(trial["task_id"], []).append(trial)
    graders = measurement.get("graders") or []
    identity = (
        "tracelens:"
        + ",".join(f"{g.get('name')}@{g.get('version')}" for g in graders if isinstance(g, dict))
        if graders
        else "tracelens:unrecorded"
    )
    prompts, rollouts, judgements = [], [], []
    for task_id in sorted(by_task):
        prompts.append(make_prompt(task_id, None, None, source_hash=hashes.get(task_id)))
        for trial in sorted(by_task[task_id], key=lambda t: t["run_index"]):
            r, j = _trial(trial, identity, unmapped)
            rollouts.append(r)
            judgements.append(j)
    n_trials = len(trials)
    for key in {k for t in trials for k in t} - _KNOWN_TRIAL:
        unmapped.add(f"trials[].{key}", "unknown trial field", sum(key in t for t in trials))
    unmapped.add(
        "trials[].transcript",
        "steps, tool calls and decision spec are not rollout fields",
        n_trials,
    )
    notes = []
    if not hashes:
        notes.append("no task hashes in the provenance: problems align by task id only")
    gradable = [j for j in judgements if j.gradable]
    per_task: dict[str, list[bool]] = {}
    for j in gradable:
        per_task.setdefault(j.problem_id, []).append(bool(j.correct))
    pass_rate = (
        sum(sum(v) / len(v) for v in per_task.values()) / len(per_task) if per_task else None
    )
    return ImportedTask(
        name=name,
        prompts=prompts,
        rollouts=rollouts,
        judgements=judgements,
        settings={
            "description": f"TraceLens eval set {name!r}",
            "grader_identity": identity,
            "source": {
                "harness": "tracelens",
                "eval_set_name": measurement.get("eval_set_name"),
                "eval_set_hash": measurement.get("eval_set_hash"),
                "content_hash": "tracelens task_hashes" if hashes else None,
            },
            "runner": measurement.get("runner"),
        },
        unmapped=unmapped,
        notes=notes,
        aligned_by="content_hash" if hashes else "id",
        source_metrics={"suite_pass_rate (mean of per-task pass rates)": pass_rate},
    )


def _trial(
    trial: dict[str, Any], identity: str, unmapped: Unmapped
) -> tuple[RolloutRecord, JudgementRecord]:
    pid = trial["task_id"]
    index = trial["run_index"]
    status = STATUSES[trial["status"]]
    raw_transcript = trial.get("transcript")
    transcript: dict[str, Any] = raw_transcript if isinstance(raw_transcript, dict) else {}
    final = transcript.get("final_output")
    text = None
    if status == "ok":
        if isinstance(final, dict) and isinstance(final.get("answer"), str):
            text = final["answer"]
        elif isinstance(final, str):
            text = final
        elif final is not None:
            text = orjson.dumps(final, option=orjson.OPT_SORT_KEYS).decode()
        else:
            text = ""
    latency_ms = as_float(final.get("latency_ms")) if isinstance(final, dict) else None
    latency = latency_ms / 1000.0 if latency_ms is not None else None
    error = trial.get("error_message") if status != "ok" or trial["status"] == "failed" else None
    rollout = RolloutRecord(
        problem_id=pid,
        index=index,
        status=status,
        text=text,
        latency_s=latency,
        error=error,
        attempt=max(1, int(trial.get("attempts") or 1)),
    )
    jrec: dict[str, Any] = {"problem_id": pid, "index": index, "status": status, "grader": identity}
    if status == "ok":
        outcomes = [o for o in trial.get("outcomes") or [] if isinstance(o, dict)]
        crashed = [o for o in outcomes if o.get("grader_error")]
        if crashed:
            jrec["grader_error"] = f"TraceLens grader {crashed[0].get('grader_id')!r} crashed" + (
                f": {crashed[0]['feedback']}" if crashed[0].get("feedback") else ""
            )
        else:
            jrec["correct"] = bool(outcomes) and all(bool(o.get("passed")) for o in outcomes)
            if text:
                jrec["extracted"] = text
            scores = [s for o in outcomes if (s := as_float(o.get("score"))) is not None]
            if scores:
                jrec["score"] = min(1.0, max(0.0, sum(scores) / len(scores)))
        metrics: dict[str, float] = {}
        for o in outcomes:
            for k, v in (o.get("metrics") or {}).items():
                fv = as_float(v)
                if fv is not None:
                    metrics[f"{o.get('grader_id')}.{k}"] = fv
                else:
                    unmapped.add("outcomes[].metrics", "value is not a number")
        if metrics:
            jrec["metrics"] = metrics
    return rollout, JudgementRecord(**jrec)
