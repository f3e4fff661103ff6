"""SiEval result directories.

A SiEval task's result directory holds ``meta.json`` (task identity and version),
``manifest.json`` (each sample's final stage), ``report.json``, and the records in
``<iteration>/<stage>/<shard>.jsonl``. A ``final`` record carries the stage-output protocol:
``preprocess_result`` (prompt, reference), ``infer_result`` (``texts``, ``finish_reasons``,
sample-level ``usage``), ``postprocess_result.rollouts[{index, prediction, extracted}]`` and
``feedback_result.rollouts[{index, correct, score?, metrics?}]``. A ``failed`` record is a
pipeline failure: a harness failure, never a wrong answer. A batch result directory (one
sub-folder per task, ``effective_config.yaml`` beside them) gives one rolleval task each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..records import JudgementRecord, Message, PromptRecord, RolloutRecord, RolloutStatus
from ._base import (
    ImportedRun,
    ImportedTask,
    Unmapped,
    as_float,
    check_unique,
    make_prompt,
    source_error,
)
from ._io import iter_jsonl, read_json_file

__all__ = ["SiEvalReader"]

_KNOWN_FINAL = {
    "sample_id",
    "iteration",
    "stage",
    "preprocess_result",
    "infer_result",
    "postprocess_result",
    "feedback_result",
    "stage_meta",
    "raw_sample",
    "repeat_index",
    "retry_count",
    "error_action",
    "error_reason",
    "error_msg",
}


def _is_task_dir(path: Path) -> bool:
    if not (path / "meta.json").is_file():
        return False
    return any(path.glob("*/final/*.jsonl")) or any(path.glob("*/failed/*.jsonl"))


def _task_dirs(path: Path) -> list[Path]:
    if _is_task_dir(path):
        return [path]
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_dir() and _is_task_dir(p))
    return []


class SiEvalReader:
    name = "sieval"

    def looks_like(self, path: Path) -> bool:
        return path.is_dir() and (
            bool(_task_dirs(path)) or (path / "effective_config.yaml").is_file()
        )

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        dirs = _task_dirs(path)
        if not dirs:
            raise source_error(
                path,
                "no SiEval task result directory (meta.json with <iteration>/final/*.jsonl shards)",
                "pass a SiEval result directory",
            )
        metas = [read_json_file(d / "meta.json", what="SiEval meta.json") for d in dirs]
        versions = sorted({str(m.get("version")) for m in metas if isinstance(m, dict)})
        provenance: dict[str, Any] = {
            "harness": "sieval",
            "harness_version": versions[0] if len(versions) == 1 else versions,
            "tasks": [m.get("task") for m in metas if isinstance(m, dict)],
        }
        cfg = path / "effective_config.yaml"
        if cfg.is_file():
            provenance["effective_config_yaml"] = cfg.read_text(errors="replace")
        tasks = (_task(d, m) for d, m in zip(dirs, metas))
        return ImportedRun(self.name, path, None, provenance, tasks)


def _records(d: Path, stage: str) -> list[tuple[Path, int, dict[str, Any]]]:
    out = []
    for shard in sorted(d.glob(f"*/{stage}/*.jsonl"), key=lambda p: (p.parent.parent.name, p.name)):
        for number, rec in iter_jsonl(shard, what=f"SiEval {stage} shard"):
            out.append((shard, number, rec))
    return out


@dataclass
class _Collected:
    """One task's records as read from its shards so far, and what they said about the run."""

    identity: str
    """The grader identity of the source's judgements."""
    unmapped: Unmapped = field(default_factory=Unmapped)
    seen: set[str] = field(default_factory=set)
    prompts: list[PromptRecord] = field(default_factory=list)
    rollouts: list[RolloutRecord] = field(default_factory=list)
    judgements: list[JudgementRecord] = field(default_factory=list)
    n_judgements: list[int] = field(default_factory=list)
    """Rollout judgements of each final sample."""
    model: Any = None
    sampling: Any = None


def _task(d: Path, meta: Any) -> ImportedTask:
    if not isinstance(meta, dict):
        raise source_error(
            d / "meta.json", "meta.json is not a JSON object", "the result directory is corrupt"
        )
    tmeta = meta.get("task") or {}
    name = str(tmeta.get("name") or d.name)
    out = _Collected(identity=f"sieval:{name}@{meta.get('version')}")
    finals = _records(d, "final")
    failed = _records(d, "failed")
    for shard, number, rec in finals:
        _add_final(out, shard, number, rec)
    ns = out.n_judgements
    n_fail = max(set(ns), key=ns.count) if ns else 1
    for shard, number, rec in failed:
        _add_failed(out, shard, number, rec, n_fail)
    notes = []
    if failed:
        notes.append(
            f"{len(failed)} samples failed in SiEval's pipeline: imported as {n_fail} harness-failure rollouts each "
            "(SiEval's 'requested' denominator counts them as wrong; rolleval's 'judged' excludes them)"
        )
    anomalies, source_metrics = _task_files(d, out.unmapped)
    return ImportedTask(
        name=name,
        prompts=out.prompts,
        rollouts=out.rollouts,
        judgements=out.judgements,
        settings={
            "description": tmeta.get("display_name") or f"SiEval task {name!r}",
            "grader_identity": out.identity,
            "sampling": out.sampling,
            "source": {
                "harness": "sieval",
                "task": tmeta,
                "version": meta.get("version"),
                "deterministic": meta.get("deterministic"),
                "meta": meta,
                "model": out.model,
            },
            "source_file": d.name,
            "source_anomalies": anomalies,
        },
        unmapped=out.unmapped,
        notes=notes,
        aligned_by="content_hash" if all(p.content_hash for p in out.prompts) else "id",
        source_metrics=source_metrics,
    )


def _add_final(out: _Collected, shard: Path, number: int, rec: dict[str, Any]) -> None:
    """A ``final`` record: its prompt, and a rollout and the source's judgement per entry of ``feedback_result.rollouts``."""
    pid = str(rec.get("sample_id"))
    if rec.get("sample_id") is None:
        raise source_error(
            shard, "final record has no 'sample_id'", "the shard is corrupt", line=number
        )
    check_unique(out.seen, pid, path=shard, what="sample_id", line=number)
    pre = rec.get("preprocess_result") or {}
    inf = rec.get("infer_result") or {}
    post = rec.get("postprocess_result") or {}
    fb = rec.get("feedback_result") or {}
    if not isinstance(fb, dict) or not isinstance(fb.get("rollouts"), list):
        raise source_error(
            shard,
            f"sample {pid}: final record has no feedback_result.rollouts (not the stage-output protocol)",
            "SiEval tasks migrated to the protocol (0.8+) write it; older result directories cannot be imported",
            line=number,
        )
    reference = pre.get("reference", fb.get("reference"))
    if reference is not None and not isinstance(reference, (str, list)):
        reference = orjson.dumps(reference).decode()
    extras = {"extra": pre["extra"]} if pre.get("extra") else {}
    out.prompts.append(make_prompt(pid, _prompt(pre.get("prompt")), reference, extras=extras))
    texts = inf.get("texts") if isinstance(inf, dict) else None
    finishes = inf.get("finish_reasons") if isinstance(inf, dict) else None
    if isinstance(inf, dict):
        out.model = out.model or inf.get("response_model") or (inf.get("model") or {}).get("model")
        out.sampling = out.sampling or inf.get("request_params")
        if inf.get("usage"):
            out.unmapped.add("infer_result.usage", "one total per sample, not per rollout")
    preds = {r.get("index"): r for r in post.get("rollouts") or [] if isinstance(r, dict)}
    judgements = fb["rollouts"]
    out.n_judgements.append(len(judgements))
    for v in judgements:
        i = v.get("index")
        if not isinstance(i, int):
            raise source_error(
                shard,
                f"sample {pid}: a rollout judgement has no 'index'",
                "the shard is corrupt",
                line=number,
            )
        text = texts[i] if isinstance(texts, list) and i < len(texts) else None
        finish = finishes[i] if isinstance(finishes, list) and i < len(finishes) else None
        if text is None:
            out.unmapped.add("infer_result.texts", "no raw text for this rollout")
        out.rollouts.append(
            RolloutRecord(
                problem_id=pid,
                index=i,
                status="ok",
                text=text if text is not None else "",
                finish_reason=finish,
            )
        )
        out.judgements.append(_source_judgement(out, pid, i, finish, v, preds.get(i) or {}))
    for key in rec.keys() - _KNOWN_FINAL:
        out.unmapped.add(key, "field not known to the importer")
    if rec.get("stage_meta"):
        out.unmapped.add("stage_meta", "per-stage timings and model-call metadata")


def _source_judgement(
    out: _Collected,
    pid: str,
    index: int,
    finish: Any,
    judgement: dict[str, Any],
    pred: dict[str, Any],
) -> JudgementRecord:
    """SiEval's judgement of one rollout (``feedback_result.rollouts[]``) with
    the extracted answer of its prediction (``postprocess_result.rollouts[]``)."""
    jrec: dict[str, Any] = {
        "problem_id": pid,
        "index": index,
        "status": "ok",
        "finish_reason": finish,
        "grader": out.identity,
        "correct": bool(judgement.get("correct")),
    }
    if pred.get("extracted") and pred.get("prediction") is not None:
        p = pred["prediction"]
        jrec["extracted"] = p if isinstance(p, str) else orjson.dumps(p).decode()
    score = as_float(judgement.get("score"))
    if score is not None and 0.0 <= score <= 1.0:
        jrec["score"] = score
    metrics = {k: as_float(x) for k, x in (judgement.get("metrics") or {}).items()}
    metrics = {k: x for k, x in metrics.items() if x is not None}
    if metrics:
        jrec["metrics"] = metrics
    if judgement.get("extra"):
        out.unmapped.add(
            "feedback_result.rollouts[].extra", "mechanism detail, not a judgement field"
        )
    return JudgementRecord(**jrec)


def _add_failed(
    out: _Collected, shard: Path, number: int, rec: dict[str, Any], n_fail: int
) -> None:
    """A ``failed`` record: its prompt and ``n_fail`` harness-failure rollouts (a grader
    crash, ``error_action`` ``feedback``, is a grader error on a completed rollout)."""
    pid = str(rec.get("sample_id"))
    check_unique(out.seen, pid, path=shard, what="sample_id", line=number)
    pre = rec.get("preprocess_result") or {}
    out.prompts.append(make_prompt(pid, _prompt(pre.get("prompt")), pre.get("reference")))
    reason = str(rec.get("error_reason") or "")
    action = str(rec.get("error_action") or "")
    msg = str(rec.get("error_msg") or reason or "SiEval pipeline failure")
    status: RolloutStatus = "timeout" if "timeout" in reason.lower() else "infra_error"
    grader_crash = action == "feedback"
    for i in range(n_fail):
        if grader_crash:
            out.rollouts.append(RolloutRecord(problem_id=pid, index=i, status="ok", text=""))
            out.judgements.append(
                JudgementRecord(
                    problem_id=pid, index=i, status="ok", grader=out.identity, grader_error=msg
                )
            )
        else:
            out.rollouts.append(RolloutRecord(problem_id=pid, index=i, status=status, error=msg))
            out.judgements.append(
                JudgementRecord(problem_id=pid, index=i, status=status, grader=out.identity)
            )


def _task_files(d: Path, unmapped: Unmapped) -> tuple[Any, dict[str, Any]]:
    """The task's ``anomalies.json`` (``None`` when absent) and ``report.json`` metrics."""
    anomalies = d / "anomalies.json"
    if anomalies.is_file():
        task_anomalies = read_json_file(anomalies, what="SiEval anomalies.json")
    else:
        task_anomalies = None
    if (d / "progress.json").is_file():
        unmapped.add("progress.json", "run progress counters, not records")
    report = d / "report.json"
    source_metrics = read_json_file(report, what="SiEval report.json") if report.is_file() else {}
    if not isinstance(source_metrics, dict):
        source_metrics = {}
    return task_anomalies, source_metrics


def _prompt(prompt: Any) -> list[Message] | str | None:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in prompt
    ):
        return [Message(role=m["role"], content=m["content"]) for m in prompt]
    return None
