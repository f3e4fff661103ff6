"""Inspect AI logs: ``.eval`` archives (zip) and ``--log-format json`` files.

One log is one task run: it becomes one rolleval task. Each sample id is a problem and each
epoch a rollout (index = epoch - 1), judged by the log's first scorer (``C``/``I``/``P``/``N``
or a number, converted as Inspect's ``value_to_float`` does). The prompt is the messages
before the first assistant reply (as the model received them), the reference the target.
A sample that ended in an error is an ``infra_error``; one stopped by a time limit a
``timeout``; a token, message or context limit is the model running out of budget (judged,
finish reason ``length``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import JudgementRecord, Message, RolloutRecord, RolloutStatus, Usage
from ._base import (
    ImportedRun,
    ImportedTask,
    Unmapped,
    as_float,
    check_unique,
    make_prompt,
    source_error,
    thought_fields,
)
from ._io import DEFAULT_MAX_UNZIPPED_BYTES, SafeZip, head_bytes, read_json_file

__all__ = ["InspectReader"]

_ZIP_MAGIC = b"PK\x03\x04"
# Inspect's value_to_float for the letter grades of its built-in scorers.
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_TIME_LIMITS = {"time", "working"}
_BUDGET_LIMITS = {"token", "message", "context"}
# Inspect stop reason -> OpenAI-style finish reason; others are kept as Inspect wrote them.
_FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length"}
_KNOWN_SAMPLE = {
    "id",
    "epoch",
    "input",
    "choices",
    "target",
    "messages",
    "output",
    "scores",
    "metadata",
    "error",
    "limit",
    "model_usage",
    "total_time",
    "working_time",
    "uuid",
    "events",
    "attachments",
    "store",
    "sandbox",
    "files",
    "setup",
    "error_retries",
    "started_at",
    "completed_at",
    "invalidation",
    "role_usage",
    "timelines",
    "metadata_details",
    "total_tokens",
    "events_data",
    "turn_count",
}


def _is_eval_zip(path: Path) -> bool:
    return path.suffix == ".eval" and head_bytes(path, 4) == _ZIP_MAGIC


def _is_json_log(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    head = head_bytes(path, 1 << 14)
    return b'"eval"' in head and (b'"status"' in head or b'"version"' in head) and b'"task"' in head


def _logs(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(
            p for p in path.iterdir() if p.is_file() and (_is_eval_zip(p) or _is_json_log(p))
        )
    return [path]


class InspectReader:
    name = "inspect"

    def __init__(self, max_unzipped_bytes: int = DEFAULT_MAX_UNZIPPED_BYTES):
        self.max_unzipped_bytes = max_unzipped_bytes

    def looks_like(self, path: Path) -> bool:
        if path.is_dir():
            return bool(_logs(path))
        return (
            _is_eval_zip(path) or _is_json_log(path) or (path.suffix == ".eval" and path.is_file())
        )

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        logs = _logs(path)
        if not logs:
            raise source_error(
                path,
                "no Inspect logs (*.eval or *.json) in the folder",
                "pass an Inspect log folder or one log",
            )
        headers = [self._header(p) for p in logs]
        first = headers[0]
        ev = first.get("eval") or {}
        model = ev.get("model")
        provenance = {
            "harness": "inspect_ai",
            "harness_version": (ev.get("packages") or {}).get("inspect_ai"),
            "logs": [
                # every key of the log header except the per-task results (source_metrics)
                # and samples: eval spec, plan, stats, status, error, version
                {
                    "file": p.name,
                    **{k: v for k, v in h.items() if k not in ("results", "samples", "reductions")},
                }
                for p, h in zip(logs, headers)
            ],
        }
        tasks = (self._task(p, h) for p, h in zip(logs, headers))
        return ImportedRun(self.name, path, model, provenance, tasks)

    def _header(self, path: Path) -> dict[str, Any]:
        if _is_eval_zip(path) or path.suffix == ".eval":
            with SafeZip(path, max_bytes=self.max_unzipped_bytes) as zf:
                names = set(zf.names())
                name = "header.json" if "header.json" in names else "_journal/start.json"
                if name not in names:
                    raise source_error(
                        path,
                        "the .eval archive has no header.json",
                        "the log is incomplete; re-run or re-save it",
                    )
                head = zf.json(name)
        else:
            head = read_json_file(path, what="Inspect JSON log")
        if not isinstance(head, dict) or not isinstance(head.get("eval"), dict):
            raise source_error(
                path, "not an Inspect log (no 'eval' object)", "pass an Inspect .eval or .json log"
            )
        return head

    def _samples(self, path: Path, header: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        if path.suffix == ".eval":
            with SafeZip(path, max_bytes=self.max_unzipped_bytes) as zf:
                for name in sorted(
                    n for n in zf.names() if n.startswith("samples/") and n.endswith(".json")
                ):
                    yield name, zf.json(name)
        else:
            for i, s in enumerate(header.get("samples") or []):
                yield f"samples[{i}]", s

    def _task(self, path: Path, header: dict[str, Any]) -> ImportedTask:
        ev = header["eval"]
        name = str(ev.get("task") or path.stem).split("/")[-1].split("@")[-1]
        unmapped = Unmapped()
        scorer = _primary_scorer(header)
        identity = f"inspect:{scorer or 'unscored'}@{ev.get('task_version', 0)}"
        prompts: dict[str, Any] = {}
        rollouts: list[RolloutRecord] = []
        judgements: list[JudgementRecord] = []
        seen: set[tuple[str, int]] = set()
        other_scorers: set[str] = set()
        for member, sample in self._samples(path, header):
            where = path if path.suffix != ".eval" else Path(f"{path}!{member}")
            if not isinstance(sample, dict) or "id" not in sample:
                raise source_error(where, "sample has no 'id'", "the log is corrupt; re-save it")
            pid = str(sample["id"])
            epoch = sample.get("epoch", 1)
            if not isinstance(epoch, int) or epoch < 1:
                raise source_error(
                    where, f"sample {pid!r} has no valid 'epoch'", "the log is corrupt; re-save it"
                )
            check_unique(seen, (pid, epoch), path=where, what="sample (id, epoch)")
            prompt = _prompt(sample)
            target = sample.get("target")
            reference = target if isinstance(target, (str, list)) else None
            if pid not in prompts:
                extras = {}
                if sample.get("metadata"):
                    extras["metadata"] = sample["metadata"]
                if sample.get("choices"):
                    extras["choices"] = sample["choices"]
                prompts[pid] = make_prompt(pid, prompt, reference, extras=extras)
            for key in sample.keys() - _KNOWN_SAMPLE:
                unmapped.add(f"samples[].{key}", "field not known to the importer")
            for key in ("events", "events_data", "store", "attachments"):
                if sample.get(key):
                    unmapped.add(f"samples[].{key}", "transcript detail, not a rollout field")
            scores = sample.get("scores") or {}
            for s in scores:
                if s != scorer:
                    other_scorers.add(s)
            r, j = _rollout(
                pid, epoch - 1, sample, scores.get(scorer) if scorer else None, identity, unmapped
            )
            rollouts.append(r)
            judgements.append(j)
        for s in sorted(other_scorers):
            unmapped.add(
                f"scores.{s}",
                f"only the first scorer, {scorer}, decides correctness (others go to metrics when numeric)",
            )
        notes = []
        if header.get("status") not in (None, "success"):
            notes.append(
                f"the Inspect log's status is {header.get('status')!r}: the run did not finish"
            )
        results = header.get("results") or {}
        source_metrics = {}
        for sc in results.get("scores") or []:
            if isinstance(sc, dict) and sc.get("name") == scorer:
                source_metrics = {
                    k: (v.get("value") if isinstance(v, dict) else v)
                    for k, v in (sc.get("metrics") or {}).items()
                }
                source_metrics["reducer"] = sc.get("reducer")
        cfg = ev.get("config") or {}
        return ImportedTask(
            name=name,
            prompts=[prompts[k] for k in sorted(prompts)],
            rollouts=rollouts,
            judgements=judgements,
            settings={
                "description": f"Inspect task {ev.get('task')!r}",
                "grader_identity": identity,
                "sampling": ev.get("model_generate_config") or None,
                "source": {
                    "harness": "inspect_ai",
                    "task": ev.get("task"),
                    "task_version": ev.get("task_version"),
                    "task_file": ev.get("task_file"),
                    "dataset": ev.get("dataset"),
                    "scorer": scorer,
                    "epochs": cfg.get("epochs"),
                    "epochs_reducer": cfg.get("epochs_reducer"),
                },
                "source_file": path.name,
            },
            unmapped=unmapped,
            notes=notes,
            aligned_by="content_hash" if all(p.content_hash for p in prompts.values()) else "id",
            source_metrics=source_metrics,
        )


def _primary_scorer(header: dict[str, Any]) -> str | None:
    for sc in (header.get("results") or {}).get("scores") or []:
        if isinstance(sc, dict) and sc.get("name"):
            return str(sc["name"])
    scorers = (header.get("eval") or {}).get("scorers") or []
    for sc in scorers:
        if isinstance(sc, dict) and sc.get("name"):
            return str(sc["name"])
    return None


def _text(content: Any) -> str | None:
    return _text_and_thought(content)[0]


def _text_and_thought(content: Any) -> tuple[str | None, str | None]:
    """A message's text, and its thought: Inspect's ``reasoning`` content parts (a reasoning
    model's thought; a redacted one has no text and is left out). ``(None, None)`` when the
    content holds other parts (images, tool calls)."""
    if isinstance(content, str):
        return content, None
    if isinstance(content, list) and all(isinstance(c, dict) for c in content):
        texts = [c.get("text") for c in content if c.get("type") == "text"]
        thoughts = [
            c.get("reasoning")
            for c in content
            if c.get("type") == "reasoning" and isinstance(c.get("reasoning"), str)
        ]
        known = sum(1 for c in content if c.get("type") in ("text", "reasoning"))
        if known == len(content):
            thought = "\n\n".join(t for t in thoughts if t)
            return "".join(t or "" for t in texts), (thought or None)
    return None, None


def _prompt(sample: dict[str, Any]) -> list[Message] | str | None:
    msgs = sample.get("messages")
    if isinstance(msgs, list) and msgs:
        out = []
        for m in msgs:
            if not isinstance(m, dict):
                return None
            if m.get("role") == "assistant":
                break
            text = _text(m.get("content"))
            if text is None:
                return None
            out.append(Message(role=str(m.get("role")), content=text))
        if out:
            return out
    inp = sample.get("input")
    return inp if isinstance(inp, str) else None


def _score_value(value: Any) -> float | None:
    if isinstance(value, str):
        return _LETTERS.get(value.strip().upper())
    return as_float(value)


def _rollout(
    pid: str, index: int, sample: dict[str, Any], score: Any, identity: str, unmapped: Unmapped
) -> tuple[RolloutRecord, JudgementRecord]:
    raw_output = sample.get("output")
    output: dict[str, Any] = raw_output if isinstance(raw_output, dict) else {}
    choices = output.get("choices") or []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    text, thought = (
        _text_and_thought(message.get("content")) if isinstance(message, dict) else (None, None)
    )
    stop = choices[0].get("stop_reason") if choices and isinstance(choices[0], dict) else None
    usage_src = output.get("usage") or {}
    usage = None
    if usage_src:
        usage = Usage(
            prompt_tokens=usage_src.get("input_tokens"),
            completion_tokens=usage_src.get("output_tokens"),
            reasoning_tokens=usage_src.get("reasoning_tokens"),
        )
    limit = sample.get("limit") if isinstance(sample.get("limit"), dict) else None
    error = sample.get("error") if isinstance(sample.get("error"), dict) else None
    status: RolloutStatus = "ok"
    err_text = None
    if error is not None:
        status, err_text = "infra_error", str(error.get("message") or "sample error")
    elif limit is not None and limit.get("type") in _TIME_LIMITS:
        status, err_text = "timeout", f"{limit.get('type')} limit {limit.get('limit')} reached"
    elif limit is not None and limit.get("type") not in _BUDGET_LIMITS:
        status, err_text = "infra_error", f"{limit.get('type')} limit {limit.get('limit')} reached"
    finish = _FINISH.get(stop, stop) if isinstance(stop, str) else stop
    if limit is not None and limit.get("type") in _BUDGET_LIMITS:
        finish = "length"
    rollout = RolloutRecord(
        problem_id=pid,
        index=index,
        status=status,
        text=(text if text is not None else "") if status == "ok" else None,
        finish_reason=finish if status == "ok" else None,
        usage=usage,
        latency_s=as_float(sample.get("total_time")),
        error=err_text,
        model=output.get("model"),
        reasoning=thought if status == "ok" else None,
    )
    jrec: dict[str, Any] = {
        "problem_id": pid,
        "index": index,
        "status": status,
        "finish_reason": rollout.finish_reason,
        "output_tokens": usage.completion_tokens if usage else None,
        "grader": identity,
        **thought_fields(rollout),
    }
    if status == "ok":
        value = _score_value(score.get("value")) if isinstance(score, dict) else None
        if value is None:
            jrec["grader_error"] = (
                "no score for this sample in the Inspect log"
                if score is None
                else f"score value {score.get('value')!r} is not a grade rolleval can read"
            )
        else:
            jrec["correct"] = value >= 1.0
            if value not in (0.0, 1.0) and 0.0 <= value <= 1.0:
                jrec["score"] = value
            answer = score.get("answer")
            if isinstance(answer, str) and answer.strip():
                jrec["extracted"] = answer
            if score.get("explanation"):
                jrec["judge_raw"] = str(score["explanation"])
        metrics = {}
        for name, sc in (sample.get("scores") or {}).items():
            if isinstance(sc, dict) and sc is not score:
                v = _score_value(sc.get("value"))
                if v is not None:
                    metrics[name] = v
        if metrics:
            jrec["metrics"] = metrics
    return rollout, JudgementRecord(**{k: v for k, v in jrec.items() if v is not None})
