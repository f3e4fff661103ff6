"""lighteval ``--save-details`` output.

An output folder holds ``results/<model>/results_<date>.json`` and
``details/<model>/<date>/details_<task>_<date>.parquet`` (columns ``doc``,
``model_response``, ``metric``); each details file is one task, each row one document. The
per-sample ``metric`` scores the document, not a rollout: with one generation per document
it is that rollout's judgement; with several (``num_samples`` > 1) lighteval's sample metrics
aggregate them (``max`` for exact match, a mean for ``avg@n``), so no single rollout's
judgement is in the file and the import needs ``--regrade``.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import DataError, MissingDependencyError
from ..records import JudgementRecord, Message, PromptRecord, RolloutRecord, Usage
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
from ._io import head_bytes, read_json_file

__all__ = ["LightevalReader"]

_DETAILS = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.parquet$")
_RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.json$")
_PARQUET_MAGIC = b"PAR1"
_INSTALL = "pip install 'rolleval[parquet]'"
_KNOWN_RESPONSE = {
    "input",
    "input_tokens",
    "text",
    "output_tokens",
    "text_post_processed",
    "reasonings",
    "logprobs",
    "argmax_logits_eq_gold",
    "logits",
    "unconditioned_logprobs",
    "truncated_tokens_count",
    "padded_tokens_count",
}


def _details(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("details_*.parquet") if _DETAILS.match(p.name))


def _results(path: Path) -> list[Path]:
    root = path if path.is_dir() else path.parent
    found = sorted(p for p in root.rglob("results_*.json") if _RESULTS.match(p.name))
    return found


class LightevalReader:
    name = "lighteval"

    def looks_like(self, path: Path) -> bool:
        if path.is_dir():
            if any(_details(path)):
                return True
            return any(b'"config_general"' in head_bytes(r, 1 << 12) for r in _results(path))
        return (
            path.suffix == ".parquet"
            and head_bytes(path, 4) == _PARQUET_MAGIC
            and bool(_DETAILS.match(path.name))
        )

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        if importlib.util.find_spec("pyarrow") is None:
            raise MissingDependencyError(
                f"importing lighteval details (parquet) needs pyarrow: {_INSTALL}"
            )
        details = _details(path)
        if not details:
            raise source_error(
                path,
                "no details_<task>_<date>.parquet files (lighteval writes them only with --save-details)",
                "rerun lighteval with --save-details; results alone have no per-sample data",
            )
        dates = {_DETAILS.match(d.name)["date"] for d in details}  # type: ignore[index]
        if len(dates) > 1:
            raise source_error(
                path,
                f"the folder holds {len(dates)} lighteval runs ({', '.join(sorted(dates))})",
                "pass the folder of one run, or one details file",
            )
        (date,) = dates
        results: dict[str, Any] = {}
        for r in _results(path if path.is_dir() else path.parent.parent.parent.parent):
            if _RESULTS.match(r.name)["date"] == date:  # type: ignore[index]
                results = read_json_file(r, what="lighteval results file")
        if not isinstance(results, dict):
            raise source_error(
                path,
                "lighteval results file is not a JSON object",
                "pass the folder lighteval wrote",
            )
        general = results.get("config_general") or {}
        model_cfg = dict(general.get("model_config") or {})
        if "api_key" in model_cfg:
            model_cfg["api_key"] = "(removed)"
        provenance = {
            "harness": "lighteval",
            "harness_version": general.get("lighteval_sha"),
            "model_name": general.get("model_name"),
            "model_config": model_cfg or None,
            "max_samples": general.get("max_samples"),
            "num_fewshot_seeds": general.get("num_fewshot_seeds"),
            "date": date,
            "summary_general": results.get("summary_general"),
            "config_general": {**general, "model_config": model_cfg or None},
            "versions": results.get("versions"),
        }
        provenance = {k: v for k, v in provenance.items() if v is not None}
        tasks = (_task(d, results, regrade) for d in details)
        return ImportedRun(self.name, path, general.get("model_name"), provenance, tasks)


def _rows(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        return cast("list[dict[str, Any]]", pq.read_table(path).to_pylist())
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(
            f"not a readable parquet file ({type(exc).__name__}: {exc}); the file may be truncated",
            path=path,
        ) from None


@dataclass
class _Collected:
    """One details file's records as read so far, and the metric that judges them."""

    source_task: str
    task_version: Any
    unmapped: Unmapped = field(default_factory=Unmapped)
    metric_name: str | None = None
    """The first metric of the first row: it decides correctness."""
    identity: str | None = None
    seen: set[str] = field(default_factory=set)
    prompts: list[PromptRecord] = field(default_factory=list)
    rollouts: list[RolloutRecord] = field(default_factory=list)
    judgements: list[JudgementRecord] = field(default_factory=list)


def _task(path: Path, results: dict[str, Any], regrade: str | None) -> ImportedTask:
    source_task = _DETAILS.match(path.name)["task"]  # type: ignore[index]
    rows = _rows(path)
    cfg = (results.get("config_tasks") or {}).get(source_task) or {}
    out = _Collected(source_task, cfg.get("version", 0))
    for i, row in enumerate(rows):
        doc, resp, metric = _row_columns(path, i, row)
        metric_name = _deciding_metric(out, path, i, metric)
        pid = str(doc.get("id") if doc.get("id") not in (None, "") else i)
        check_unique(out.seen, pid, path=path, what="document id")
        out.prompts.append(_document_prompt(pid, doc, resp))
        for key in resp.keys() - _KNOWN_RESPONSE:
            out.unmapped.add(f"model_response.{key}", "field not known to the importer")
        _add_generations(out, path, pid, resp, as_float(metric.get(metric_name)), regrade)
    if out.metric_name is None:
        raise source_error(
            path, "the details file holds no rows", "pass a non-empty lighteval details file"
        )
    res = (results.get("results") or {}).get(source_task) or {}
    return ImportedTask(
        name=re.sub(r"[|/\\]", "_", source_task),
        prompts=out.prompts,
        rollouts=out.rollouts,
        judgements=out.judgements,
        settings=_settings(path, results, cfg, out),
        unmapped=out.unmapped,
        aligned_by="content_hash" if all(p.content_hash for p in out.prompts) else "id",
        source_metrics={k: v for k, v in res.items() if isinstance(v, (int, float))},
    )


def _row_columns(
    path: Path, i: int, row: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A row's ``doc``, ``model_response`` and ``metric`` columns (each a mapping)."""
    doc = row.get("doc") or {}
    resp = row.get("model_response") or {}
    metric = row.get("metric") or {}
    if not isinstance(doc, dict) or not isinstance(resp, dict) or not isinstance(metric, dict):
        raise source_error(
            path,
            f"row {i} lacks the doc / model_response / metric columns",
            "this is not a lighteval details file",
        )
    return doc, resp, metric


def _deciding_metric(out: _Collected, path: Path, i: int, metric: dict[str, Any]) -> str:
    """The metric that decides correctness: the first row's first (the others are unmapped)."""
    if out.metric_name is None:
        if not metric:
            raise source_error(
                path, f"row {i} has no metric values", "rerun lighteval with a metric"
            )
        out.metric_name = next(iter(metric))
        out.identity = f"lighteval:{out.source_task}:{out.metric_name}@{out.task_version}"
    for other in list(metric)[1:]:
        out.unmapped.add(
            f"metric.{other}", f"only the first metric, {out.metric_name}, decides correctness"
        )
    return out.metric_name


def _document_prompt(pid: str, doc: dict[str, Any], resp: dict[str, Any]) -> PromptRecord:
    """The document's prompt as sent, its gold choice(s) as the reference."""
    choices = doc.get("choices") or []
    gold = doc.get("gold_index")
    golds = gold if isinstance(gold, list) else [gold]
    refs = [choices[g] for g in golds if isinstance(g, int) and 0 <= g < len(choices)]
    reference: Any = refs[0] if len(refs) == 1 else (refs or None)
    prompt = _prompt(resp.get("input"), doc.get("query"))
    extras = {
        k: doc[k]
        for k in ("choices", "gold_index", "instruction", "specific")
        if doc.get(k) is not None
    }
    return make_prompt(pid, prompt, reference, extras=extras)


def _add_generations(
    out: _Collected,
    path: Path,
    pid: str,
    resp: dict[str, Any],
    value: float | None,
    regrade: str | None,
) -> None:
    """One rollout per generated text (one empty rollout for a log-likelihood task), each
    judged by the document's metric ``value``; several generations need ``--regrade``."""
    texts = [t for t in resp.get("text") or [] if isinstance(t, str)]
    reasonings = resp.get("reasonings") or []
    post = resp.get("text_post_processed") or []
    out_tokens = resp.get("output_tokens") or []
    in_tokens = resp.get("input_tokens") or []
    if len(texts) > 1 and regrade is None:
        raise source_error(
            path,
            f"document {pid}: {len(texts)} generations but one per-document score ({out.metric_name}), "
            "so no single generation's judgement is in the file",
            "pass --regrade TYPE to judge every generation with rolleval's grader",
        )
    if not texts:
        texts = [""]
        out.unmapped.add("model_response.text", "no generated text (log-likelihood task)")
    for j, text in enumerate(texts):
        usage = None
        if j < len(out_tokens) and isinstance(out_tokens[j], list):
            usage = Usage(
                prompt_tokens=len(in_tokens) if in_tokens else None,
                completion_tokens=len(out_tokens[j]),
            )
        truncated = (resp.get("truncated_tokens_count") or 0) > 0
        thought = reasonings[j] if j < len(reasonings) else None
        rollout = RolloutRecord(
            problem_id=pid,
            index=j,
            status="ok",
            text=text,
            usage=usage,
            reasoning=thought if isinstance(thought, str) and thought else None,
        )
        out.rollouts.append(rollout)
        post_processed = post[j] if j < len(post) and isinstance(post[j], str) else None
        if truncated:
            out.unmapped.add(
                "model_response.truncated_tokens_count",
                "prompt truncation is not a rollout field",
            )
        out.judgements.append(_metric_judgement(out.identity, rollout, value, post_processed))


def _metric_judgement(
    identity: str | None, rollout: RolloutRecord, value: float | None, post_processed: str | None
) -> JudgementRecord:
    """The judgement lighteval's metric ``value`` gives ``rollout``: correct at 1, a partial
    score strictly between 0 and 1; its post-processed text is the extracted answer."""
    jrec: dict[str, Any] = {
        "problem_id": rollout.problem_id,
        "index": rollout.index,
        "status": "ok",
        "grader": identity,
        **thought_fields(rollout),
    }
    if value is None:
        jrec["grader_error"] = "lighteval logged no value for the metric"
    else:
        jrec["correct"] = value >= 1.0
        if 0.0 < value < 1.0:
            jrec["score"] = value
    if post_processed is not None and post_processed.strip():
        jrec["extracted"] = post_processed.strip()
    return JudgementRecord(**jrec)


def _settings(
    path: Path, results: dict[str, Any], cfg: dict[str, Any], out: _Collected
) -> dict[str, Any]:
    """The task.json settings of an imported details file: grader identity, sampling, and
    the task's lighteval configuration as its source."""
    source_task = out.source_task
    return {
        "description": f"lighteval task {source_task!r}",
        "grader_identity": out.identity,
        "sampling": ((results.get("config_general") or {}).get("model_config") or {}).get(
            "generation_parameters"
        ),
        "source": {
            "harness": "lighteval",
            "task": source_task,
            "task_version": cfg.get("version"),
            "metric": out.metric_name,
            "hf_repo": cfg.get("hf_repo"),
            "hf_subset": cfg.get("hf_subset"),
            "evaluation_splits": cfg.get("evaluation_splits"),
            "generation_size": cfg.get("generation_size"),
            "stop_sequence": cfg.get("stop_sequence"),
            "num_fewshots": cfg.get("num_fewshots"),
        },
        "source_file": path.name,
        "source_summary": (results.get("summary_tasks") or {}).get(source_task),
    }


def _prompt(messages: Any, query: Any) -> list[Message] | str | None:
    if (
        isinstance(messages, list)
        and messages
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        return [Message(role=m["role"], content=m["content"]) for m in messages]
    return query if isinstance(query, str) else None
