"""lm-evaluation-harness ``--output_path ... --log_samples`` output.

An output folder holds ``results_<date>.json`` and one ``samples_<task>_<date>.jsonl`` per
task (lm-eval puts both in a sub-folder named after the model); each samples file becomes
one rolleval task, each line (``doc_id``) one problem. ``resps[0]`` holds every repeat's raw
text, but the per-sample metrics score the *filtered* response, and lm-eval's default filter
keeps only the first repeat (``take_first``). So, unless ``--regrade`` is given, a problem
gets one rollout (repeat 0) judged by lm-eval's own metric, and the summary says how many
repeats were left out; with ``--regrade`` every repeat becomes a rollout judged by rolleval.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..records import JudgementRecord, PromptRecord, RolloutRecord
from ._base import (
    ImportedRun,
    ImportedTask,
    Unmapped,
    as_float,
    check_unique,
    make_prompt,
    source_error,
)
from ._io import head_bytes, iter_jsonl, read_json_file

__all__ = ["LmEvalReader"]

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.json$")
_KNOWN_LINE = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}


def _files(path: Path) -> tuple[list[Path], list[Path]]:
    """(results files, samples files) of an output folder: its top level and one level down."""
    results: list[Path] = []
    samples: list[Path] = []
    for p in sorted([*path.glob("*"), *path.glob("*/*")]):
        if p.is_file():
            if _RESULTS.match(p.name):
                results.append(p)
            elif _SAMPLES.match(p.name):
                samples.append(p)
    return results, samples


class LmEvalReader:
    name = "lm-eval"

    def looks_like(self, path: Path) -> bool:
        if path.is_dir():
            results, samples = _files(path)
            return bool(samples) or any(
                b'"lm_eval_version"' in head_bytes(r, 1 << 16)
                or b'"task_hashes"' in head_bytes(r, 1 << 16)
                or b'"configs"' in head_bytes(r, 1 << 16)
                for r in results
            )
        if path.suffix == ".jsonl":
            head = head_bytes(path, 1 << 16)
            return b'"doc_id"' in head and b'"resps"' in head
        return bool(_RESULTS.match(path.name))

    def read(self, path: Path, *, regrade: str | None) -> ImportedRun:
        if path.is_dir():
            results_files, samples = _files(path)
            dates = {_RESULTS.match(r.name)["date"] for r in results_files}  # type: ignore[index]
            if len(dates) > 1:
                raise source_error(
                    path,
                    f"the folder holds {len(dates)} lm-eval runs ({', '.join(sorted(r.name for r in results_files))})",
                    "pass one samples file, or a folder with one run",
                )
            if dates:
                (date,) = dates
                samples = [s for s in samples if _SAMPLES.match(s.name)["date"] == date]  # type: ignore[index]
            if not samples:
                raise source_error(
                    path,
                    "no samples_<task>_<date>.jsonl files (lm-eval writes them only with --log_samples)",
                    "rerun lm-eval with --log_samples; aggregate results alone have no per-sample data",
                )
            results = (
                read_json_file(results_files[0], what="lm-eval results file")
                if results_files
                else {}
            )
        elif _RESULTS.match(path.name):
            return self.read(path.parent, regrade=regrade)
        else:
            samples = [path]
            m = _SAMPLES.match(path.name)
            sibling = path.with_name(f"results_{m['date']}.json") if m else None
            results = (
                read_json_file(sibling, what="lm-eval results file")
                if sibling and sibling.exists()
                else {}
            )
        if not isinstance(results, dict):
            raise source_error(
                path, "lm-eval results file is not a JSON object", "pass the folder lm-eval wrote"
            )
        config = results.get("config") or {}
        model = results.get("model_name") or config.get("model_args") or config.get("model")
        # Every top-level key of the results file except the per-task blocks, which go to
        # each task (results -> source_metrics, configs -> sampling/source).
        provenance = {
            "harness": "lm-evaluation-harness",
            "harness_version": results.get("lm_eval_version"),
            **{k: v for k, v in results.items() if k not in ("results", "configs")},
        }
        tasks = (_task(s, results, regrade) for s in samples)
        return ImportedRun(self.name, path, str(model) if model else None, provenance, tasks)


def _task_name(path: Path) -> str:
    m = _SAMPLES.match(path.name)
    return m["task"] if m else path.stem


def _prompt(line: dict[str, Any], path: Path, number: int) -> Any:
    args = line.get("arguments")
    first: Any = None
    if isinstance(args, dict):  # lm-eval's on-disk shape: {"gen_args_0": {"arg_0": prompt, ...}}
        g0 = args.get("gen_args_0")
        if isinstance(g0, dict):
            first = g0.get("arg_0")
    elif isinstance(args, list) and args and isinstance(args[0], list) and args[0]:
        first = args[0][0]
    if isinstance(first, list) and len(first) == 1:  # chat requests: [json string of messages]
        first = first[0]
    if not isinstance(first, str):
        return None
    if first.startswith("["):  # chat requests are logged as a JSON list of messages
        try:
            msgs = orjson.loads(first)
        except orjson.JSONDecodeError:
            return first
        if isinstance(msgs, list) and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in msgs
        ):
            return [{"role": m["role"], "content": m["content"]} for m in msgs]
    return first


def _filter_is_take_first(cfg: dict[str, Any], filter_name: str) -> bool | None:
    """True/False when the task config says whether ``filter_name`` ends in take_first."""
    flist = cfg.get("filter_list")
    if not flist:
        return filter_name == "none" if cfg else None
    for f in flist:
        if isinstance(f, dict) and f.get("name") == filter_name:
            fns = [x.get("function") for x in f.get("filter") or [] if isinstance(x, dict)]
            return bool(fns) and fns[-1] == "take_first"
    return None


def _task(path: Path, results: dict[str, Any], regrade: str | None) -> ImportedTask:
    """The task of one samples file; its records stream from the file as the writer reads
    them (memory stays bounded by one document), and the task's settings, notes and
    unmapped counts are complete once the stream is exhausted."""
    name = _task_name(path)
    task = ImportedTask(
        name=name.replace("/", "_"), prompts=[], rollouts=[], judgements=[], settings={}
    )
    task.stream = _stream(path, results, regrade, task)
    return task


def _stream(
    path: Path, results: dict[str, Any], regrade: str | None, task: ImportedTask
) -> Iterator[tuple[PromptRecord, list[RolloutRecord], list[JudgementRecord]]]:
    name = _task_name(path)
    cfg = (results.get("configs") or {}).get(name) or {}
    unmapped = task.unmapped
    primary_filter: str | None = None
    seen: set[Any] = set()
    metric_name: str | None = None
    max_repeats = 0
    left_out = 0
    missing_prompt = False
    version = (results.get("versions") or {}).get(name)
    identity = None
    for number, line in iter_jsonl(path, what="lm-eval samples file"):
        if "doc_id" not in line or "resps" not in line:
            raise source_error(
                path,
                "line has no 'doc_id' or 'resps'",
                "this is not an lm-eval --log_samples file",
                line=number,
            )
        fname = str(line.get("filter", "none"))
        if primary_filter is None:
            primary_filter = fname
            metrics = line.get("metrics") or []
            if not metrics:
                raise source_error(
                    path,
                    "sample lists no metrics",
                    "re-run lm-eval with a metric_list",
                    line=number,
                )
            metric_name = str(metrics[0])
            for other in metrics[1:]:
                unmapped.add(
                    f"{other} (per-sample metric)",
                    f"only the first metric, {metric_name}, decides correctness",
                )
            identity = f"lm-eval:{name}:{metric_name}[{fname}]@{version if version is not None else 'unversioned'}"
        if fname != primary_filter:
            unmapped.add("lines of other filters", f"only filter {primary_filter!r} is imported")
            continue
        pid = str(line["doc_id"])
        check_unique(seen, pid, path=path, what="doc_id", line=number)
        resps = line.get("resps")
        if not isinstance(resps, list) or not resps:
            raise source_error(
                path, f"doc {pid}: 'resps' is empty", "the samples file is corrupt", line=number
            )
        prompt = _prompt(line, path, number)
        target = line.get("target")
        reference = target if isinstance(target, str) else (None if target is None else str(target))
        extras: dict[str, Any] = {}
        for h in ("doc_hash", "prompt_hash", "target_hash"):
            if h in line:
                extras[h] = line[h]
        if "doc" in line:
            extras["doc"] = line["doc"]
        prompt_record = make_prompt(pid, prompt, reference, extras=extras)
        missing_prompt = missing_prompt or prompt_record.content_hash is None
        for key in line.keys() - _KNOWN_LINE - set(line.get("metrics") or []):
            unmapped.add(key, "field not known to the importer")
        assert metric_name is not None  # set with primary_filter, on the first line
        value = line.get(metric_name)
        fv = as_float(value)
        generative = isinstance(resps[0], list) and all(isinstance(t, str) for t in resps[0])
        filtered = line.get("filtered_resps") or []
        if generative and len(resps) == 1:
            texts = list(resps[0])
        elif generative:
            raise source_error(
                path,
                f"doc {pid}: {len(resps)} generation requests for one document",
                "multi-request generation tasks are not supported; import one request per document",
                line=number,
            )
        else:
            texts = []  # log-likelihood task: one decision per document, no generated text
        n = max(1, len(texts))
        max_repeats = max(max_repeats, n)
        if regrade is not None and generative:
            yield (
                prompt_record,
                [
                    RolloutRecord(problem_id=pid, index=j, status="ok", text=text)
                    for j, text in enumerate(texts)
                ],
                [
                    _judgement(pid, j, fv, filtered, identity, unmapped, j == 0)
                    for j in range(len(texts))
                ],
            )
            continue
        if n > 1:
            take_first = _filter_is_take_first(cfg, fname)
            if not take_first:
                why = (
                    f"filter {fname!r} does not end in take_first"
                    if take_first is False
                    else f"the task config for filter {fname!r} is unknown (no results file beside the samples)"
                )
                raise source_error(
                    path,
                    f"doc {pid}: {n} repeats but one per-sample score, and {why}, so the score belongs to no single repeat",
                    "pass --regrade TYPE to judge every repeat with rolleval's grader",
                    line=number,
                )
            left_out += n - 1
        text = texts[0] if texts else None
        yield (
            prompt_record,
            [RolloutRecord(problem_id=pid, index=0, status="ok", text=text)],
            [_judgement(pid, 0, fv, filtered, identity, unmapped, True)],
        )
    if primary_filter is None:
        raise source_error(
            path, "the samples file holds no samples", "pass a non-empty lm-eval samples file"
        )
    notes = task.notes
    if left_out:
        notes.append(
            f"lm-eval scored only the first of up to {max_repeats} repeats (take_first): imported n = 1 per problem; "
            f"{left_out} later repeats left out (pass --regrade TYPE to judge every repeat)"
        )
        unmapped.add("resps[0][1:]", "repeats without a per-repeat score (take_first)", left_out)
    if missing_prompt:
        notes.append("some documents have no logged prompt: those align by doc_id only")
    res = (results.get("results") or {}).get(name) or {}
    source_metrics = {
        k: v
        for k, v in res.items()
        if isinstance(k, str) and k.split(",")[0] == metric_name and "," in k
    }
    sampling = dict(cfg.get("generation_kwargs") or {})
    settings: dict[str, Any] = {
        "description": f"lm-eval task {name!r}"
        + (f" (version {version})" if version is not None else ""),
        "grader_identity": identity,
        "sampling": sampling or None,
        "source": {
            "harness": "lm-evaluation-harness",
            "task": name,
            "task_version": version,
            "task_hash": (results.get("task_hashes") or {}).get(name),
            "filter": primary_filter,
            "metric": metric_name,
            "repeats": cfg.get("repeats"),
            "n_samples": (results.get("n-samples") or {}).get(name),
        },
        "source_file": path.name,
    }
    task.settings = settings
    task.aligned_by = "id" if missing_prompt else "content_hash"
    task.source_metrics = source_metrics


def _judgement(
    pid: str,
    index: int,
    value: float | None,
    filtered: list[Any],
    identity: str | None,
    unmapped: Unmapped,
    scored: bool,
) -> JudgementRecord:
    """The judgement of one rollout from lm-eval's per-sample metric (``scored`` rollouts only)."""
    rec: dict[str, Any] = {"problem_id": pid, "index": index, "status": "ok", "grader": identity}
    if not scored:
        rec["grader_error"] = "no per-repeat score in the lm-eval log (regraded below)"
        return JudgementRecord(**rec)
    if value is None:
        rec["grader_error"] = "lm-eval logged no value for the metric"
        unmapped.add("metric value", "missing or not a number")
        return JudgementRecord(**rec)
    rec["correct"] = value >= 1.0
    if 0.0 <= value <= 1.0 and value not in (0.0, 1.0):
        rec["score"] = value
    f0 = filtered[0] if filtered else None
    if isinstance(f0, str):
        rec["extracted"] = f0.strip() or None
    elif isinstance(f0, list) and f0 and isinstance(f0[0], str):
        rec["extracted"] = f0[0].strip() or None
    elif (
        isinstance(filtered, list)
        and filtered
        and all(isinstance(x, list) and x and isinstance(x[0], (int, float)) for x in filtered)
    ):
        # log-likelihood choices: the choice with the highest log-likelihood
        best = max(range(len(filtered)), key=lambda i: filtered[i][0])
        rec["extracted"] = str(best)
    return JudgementRecord(**rec)
