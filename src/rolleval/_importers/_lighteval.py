"""lighteval ``--save-details`` output.

An output folder holds ``results/<model>/results_<date>.json`` and
``details/<model>/<date>/details_<task>_<date>.parquet`` (columns ``doc``,
``model_response``, ``metric``); each details file is one task, each row one document. The
per-sample ``metric`` scores the document, not a rollout: with one generation per document
it is that rollout's verdict; with several (``num_samples`` > 1) lighteval's sample metrics
aggregate them (``max`` for exact match, a mean for ``avg@n``), so no single rollout's
verdict is in the file and the import needs ``--regrade``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any, cast

from ..errors import DataError, MissingDependencyError
from ..records import JudgementRecord, Message, RolloutRecord, Usage
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


def _task(path: Path, results: dict[str, Any], regrade: str | None) -> ImportedTask:
    source_task = _DETAILS.match(path.name)["task"]  # type: ignore[index]
    name = re.sub(r"[|/\\]", "_", source_task)
    unmapped = Unmapped()
    rows = _rows(path)
    cfg = (results.get("config_tasks") or {}).get(source_task) or {}
    metric_name = None
    identity = None
    prompts = []
    rollouts: list[RolloutRecord] = []
    judgements: list[JudgementRecord] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        doc = row.get("doc") or {}
        resp = row.get("model_response") or {}
        metric = row.get("metric") or {}
        if not isinstance(doc, dict) or not isinstance(resp, dict) or not isinstance(metric, dict):
            raise source_error(
                path,
                f"row {i} lacks the doc / model_response / metric columns",
                "this is not a lighteval details file",
            )
        if metric_name is None:
            if not metric:
                raise source_error(
                    path, f"row {i} has no metric values", "rerun lighteval with a metric"
                )
            metric_name = next(iter(metric))
            identity = f"lighteval:{source_task}:{metric_name}@{cfg.get('version', 0)}"
        for other in list(metric)[1:]:
            unmapped.add(
                f"metric.{other}", f"only the first metric, {metric_name}, decides correctness"
            )
        pid = str(doc.get("id") if doc.get("id") not in (None, "") else i)
        check_unique(seen, pid, path=path, what="document id")
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
        prompts.append(make_prompt(pid, prompt, reference, extras=extras))
        for key in resp.keys() - _KNOWN_RESPONSE:
            unmapped.add(f"model_response.{key}", "field not known to the importer")
        texts = [t for t in resp.get("text") or [] if isinstance(t, str)]
        reasonings = resp.get("reasonings") or []
        post = resp.get("text_post_processed") or []
        out_tokens = resp.get("output_tokens") or []
        in_tokens = resp.get("input_tokens") or []
        value = as_float(metric.get(metric_name))
        if len(texts) > 1 and regrade is None:
            raise source_error(
                path,
                f"document {pid}: {len(texts)} generations but one per-document score ({metric_name}), "
                "so no single generation's verdict is in the file",
                "pass --regrade TYPE to judge every generation with rolleval's grader",
            )
        if not texts:
            texts = [""]
            unmapped.add("model_response.text", "no generated text (log-likelihood task)")
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
            rollouts.append(rollout)
            jrec: dict[str, Any] = {
                "problem_id": pid,
                "index": j,
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
            p = post[j] if j < len(post) and isinstance(post[j], str) else None
            if p is not None and p.strip():
                jrec["extracted"] = p.strip()
            if truncated:
                unmapped.add(
                    "model_response.truncated_tokens_count",
                    "prompt truncation is not a rollout field",
                )
            judgements.append(JudgementRecord(**jrec))
    if metric_name is None:
        raise source_error(
            path, "the details file holds no rows", "pass a non-empty lighteval details file"
        )
    res = (results.get("results") or {}).get(source_task) or {}
    return ImportedTask(
        name=name,
        prompts=prompts,
        rollouts=rollouts,
        judgements=judgements,
        settings={
            "description": f"lighteval task {source_task!r}",
            "grader_identity": identity,
            "sampling": ((results.get("config_general") or {}).get("model_config") or {}).get(
                "generation_parameters"
            ),
            "source": {
                "harness": "lighteval",
                "task": source_task,
                "task_version": cfg.get("version"),
                "metric": metric_name,
                "hf_repo": cfg.get("hf_repo"),
                "hf_subset": cfg.get("hf_subset"),
                "evaluation_splits": cfg.get("evaluation_splits"),
                "generation_size": cfg.get("generation_size"),
                "stop_sequence": cfg.get("stop_sequence"),
                "num_fewshots": cfg.get("num_fewshots"),
            },
            "source_file": path.name,
            "source_summary": (results.get("summary_tasks") or {}).get(source_task),
        },
        unmapped=unmapped,
        aligned_by="content_hash" if all(p.content_hash for p in prompts) else "id",
        source_metrics={k: v for k, v in res.items() if isinstance(v, (int, float))},
    )


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
