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

import contextlib
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ...records import JudgementRecord, PromptRecord, RolloutRecord
from ...records._lines import line_of
from .._base import (
    ImportedRun,
    ImportedTask,
    Unmapped,
    as_float,
    check_unique,
    make_prompt,
    source_error,
    thought_fields,
    with_clusters,
)
from .._batch import LineBatch
from .._io import head_bytes, parse_jsonl_line, read_json_file
from ._parallel import Chunk, Converted, serial_chunks, usable_cpus
from ._strict import LINE_KEYS, StrictChunks, StrictSpec, apply, strict_spec
from ._thinking import think_end_token, thinking_pair

__all__ = ["LmEvalReader"]

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.json$")
_KNOWN_LINE = set(LINE_KEYS)


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
    them (memory stays bounded by a chunk of lines), and the task's settings, notes and
    unmapped counts are complete once the stream is exhausted."""
    name = _task_name(path)
    task = ImportedTask(
        name=name.replace("/", "_"), prompts=[], rollouts=[], judgements=[], settings={}
    )
    task.stream = _stream(path, results, regrade, task)
    return task


_BATCH = 2048
"""Documents per batch handed to the writer from lines read one at a time."""

_WHAT = "lm-eval samples file"
_CHUNK = 16 << 10
"""Bytes of lines decoded per call: small enough that a chunk's objects stay in the CPU's
cache (larger chunks are slower), large enough to amortise the call."""
_PARALLEL_BYTES = 32 << 20
"""A samples file with at least this many bytes after its first line is converted by worker
processes (one per usable CPU) where more than one CPU is usable."""


class _Samples:
    """What reading one samples file has found so far (shared by both paths)."""

    def __init__(
        self, path: Path, results: dict[str, Any], regrade: str | None, task: ImportedTask
    ):
        self.path = path
        self.name = _task_name(path)
        self.results = results
        self.regrade = regrade
        self.task = task
        self.cfg = (results.get("configs") or {}).get(self.name) or {}
        self.unmapped = task.unmapped
        self.primary_filter: str | None = None
        self.first_metrics: Any = None
        self.seen: set[Any] = set()
        self.unseen: list[str] = []
        """doc_ids read in increasing integer order (so distinct) and not put in ``seen``
        yet: a set lookup per line costs more than the column path's other checks; they
        join ``seen`` once a doc_id breaks the order."""
        self.last_int: int | None = None
        """The highest integer doc_id so far while every doc_id after the first line was an
        increasing integer (None: off, every doc_id is checked against ``seen``)."""
        self.extra: tuple[str, ...] = ()
        """Keys of the first line the importer does not map, on every column-path line."""
        self.metric_name: str | None = None
        self.max_repeats = 0
        self.left_out = 0
        self.missing_prompt = False
        self.version = (results.get("versions") or {}).get(self.name)
        self.identity: str | None = None
        self._take_first: dict[str, bool | None] = {}
        self.think_end = think_end_token(results.get("config"))
        self.thinking = thinking_pair(self.think_end) if isinstance(self.think_end, str) else None
        """The task's thinking delimiters from lm-eval's ``think_end_token`` (None: not set,
        or a token id): see :mod:`._thinking`."""
        self.unclosed = 0
        self.unstripped = 0

    def take_first_for(self, fname: str) -> bool | None:
        if fname not in self._take_first:
            self._take_first[fname] = _filter_is_take_first(self.cfg, fname)
        return self._take_first[fname]

    def line(
        self, number: int, line: dict[str, Any]
    ) -> tuple[PromptRecord, list[RolloutRecord], list[JudgementRecord]] | None:
        """The records of one parsed line (the generic path), or None for a line of
        another filter."""
        if "doc_id" not in line or "resps" not in line:
            raise source_error(
                self.path,
                "line has no 'doc_id' or 'resps'",
                "this is not an lm-eval --log_samples file",
                line=number,
            )
        fname = str(line.get("filter", "none"))
        if self.primary_filter is None:
            self._first_line(number, line, fname)
        if fname != self.primary_filter:
            self.unmapped.add(
                "lines of other filters", f"only filter {self.primary_filter!r} is imported"
            )
            return None
        pid = self._doc_id(number, line["doc_id"])
        resps = line.get("resps")
        if not isinstance(resps, list) or not resps:
            raise source_error(
                self.path,
                f"doc {pid}: 'resps' is empty",
                "the samples file is corrupt",
                line=number,
            )
        prompt_record = self._prompt_record(number, line, pid)
        metric_name = self.metric_name
        assert metric_name is not None  # set with primary_filter, on the first line
        fv = as_float(line.get(metric_name))
        filtered = line.get("filtered_resps") or []
        texts, generative = self._texts(number, resps, pid)
        n = max(1, len(texts))
        self.max_repeats = max(self.max_repeats, n)
        if self.regrade is not None and generative:
            return prompt_record, *self._regraded(pid, texts, fv, filtered)
        if n > 1:
            self._check_take_first(number, fname, pid, n)
            self.left_out += n - 1
        text = texts[0] if texts else None
        rollout = RolloutRecord(problem_id=pid, index=0, status="ok", text=text)
        judgement = _judgement(pid, 0, fv, filtered, self.identity, self.unmapped, True)
        if self.thinking is not None and text is not None:
            judgement = self._thought(rollout, judgement)
        return prompt_record, [rollout], with_clusters([judgement])

    def _first_line(self, number: int, line: dict[str, Any], fname: str) -> None:
        """The file's filter, its metric (the first of the line's metrics) and the grader
        identity, from the first line."""
        self.primary_filter = fname
        metrics = line.get("metrics") or []
        if not metrics:
            raise source_error(
                self.path,
                "sample lists no metrics",
                "re-run lm-eval with a metric_list",
                line=number,
            )
        self.first_metrics = line.get("metrics")
        self.metric_name = metric_name = str(metrics[0])
        for other in metrics[1:]:
            self.unmapped.add(
                f"{other} (per-sample metric)",
                f"only the first metric, {metric_name}, decides correctness",
            )
        version = self.version
        self.identity = f"lm-eval:{self.name}:{metric_name}[{fname}]@{version if version is not None else 'unversioned'}"

    def _doc_id(self, number: int, did: Any) -> str:
        """The problem id of a doc_id, checked to be new (by the increasing-integer fast
        check while it holds, else against every doc_id so far)."""
        pid = str(did)
        last = self.last_int
        if last is not None and type(did) is int and did > last:
            self.last_int = did  # greater than every doc_id so far: new
            self.unseen.append(pid)
            return pid
        if self.unseen:
            self.seen.update(self.unseen)
            self.unseen.clear()
        self.last_int = None  # every doc_id is checked against the set from now on
        check_unique(self.seen, pid, path=self.path, what="doc_id", line=number)
        return pid

    def _prompt_record(self, number: int, line: dict[str, Any], pid: str) -> PromptRecord:
        """The problem's prompt, reference and the line's hashes and doc; the keys the
        importer does not map are counted."""
        prompt = _prompt(line, self.path, number)
        target = line.get("target")
        reference = target if isinstance(target, str) else (None if target is None else str(target))
        extras: dict[str, Any] = {}
        for h in ("doc_hash", "prompt_hash", "target_hash"):
            if h in line:
                extras[h] = line[h]
        if "doc" in line:
            extras["doc"] = line["doc"]
        prompt_record = make_prompt(pid, prompt, reference, extras=extras)
        self.missing_prompt = self.missing_prompt or prompt_record.content_hash is None
        for key in line.keys() - _KNOWN_LINE - set(line.get("metrics") or []):
            self.unmapped.add(key, "field not known to the importer")
        return prompt_record

    def _texts(self, number: int, resps: list[Any], pid: str) -> tuple[list[str], bool]:
        """``(texts, generative)``: every repeat's text of a generation task (one request
        per document), none for a log-likelihood task."""
        generative = isinstance(resps[0], list) and all(isinstance(t, str) for t in resps[0])
        if generative and len(resps) == 1:
            return list(resps[0]), True
        if generative:
            raise source_error(
                self.path,
                f"doc {pid}: {len(resps)} generation requests for one document",
                "multi-request generation tasks are not supported; import one request per document",
                line=number,
            )
        return [], False  # log-likelihood task: one decision per document, no generated text

    def _regraded(
        self, pid: str, texts: list[str], fv: float | None, filtered: list[Any]
    ) -> tuple[list[RolloutRecord], list[JudgementRecord]]:
        """Every repeat a rollout, for ``--regrade`` to judge (repeat 0 keeps lm-eval's
        score)."""
        return (
            [
                RolloutRecord(problem_id=pid, index=j, status="ok", text=text)
                for j, text in enumerate(texts)
            ],
            with_clusters(
                [
                    _judgement(pid, j, fv, filtered, self.identity, self.unmapped, j == 0)
                    for j in range(len(texts))
                ]
            ),
        )

    def _check_take_first(self, number: int, fname: str, pid: str, n: int) -> None:
        """A document with ``n > 1`` repeats has one score: refused unless the filter keeps
        the first repeat (``take_first``)."""
        take_first = self.take_first_for(fname)
        if take_first:
            return
        why = (
            f"filter {fname!r} does not end in take_first"
            if take_first is False
            else f"the task config for filter {fname!r} is unknown (no results file beside the samples)"
        )
        raise source_error(
            self.path,
            f"doc {pid}: {n} repeats but one per-sample score, and {why}, so the score belongs to no single repeat",
            "pass --regrade TYPE to judge every repeat with rolleval's grader",
            line=number,
        )

    def _thought(self, rollout: RolloutRecord, judgement: JudgementRecord) -> JudgementRecord:
        """lm-eval's judgement of a text under ``think_end_token`` (see :mod:`._thinking`): a
        thought opened and never closed is no answer, whatever lm-eval scored; the thought
        health fields by the task's delimiters."""
        from ...grading import NO_ANSWER

        assert self.thinking is not None and rollout.text is not None
        fields = thought_fields(rollout, self.thinking)
        if self.thinking[1] in rollout.text:
            self.unstripped += 1
        if fields.get("in_thought"):
            self.unclosed += 1
            return judgement.model_copy(
                update={
                    "correct": NO_ANSWER.correct,
                    "extracted": NO_ANSWER.extracted,
                    "cluster": NO_ANSWER.cluster,
                    "score": None,
                    "grader_error": None,
                    **fields,
                }
            )
        return judgement.model_copy(update=fields)

    def strict(self, first_line: dict[str, Any]) -> StrictSpec | None:
        """The column path's spec for the lines after ``first_line`` (read by :meth:`line`),
        or None where the file is read line by line (``--regrade``, log-likelihood tasks, a
        first line without every common key). Also starts the increasing-id check of the doc_ids
        after the first line's."""
        did = first_line.get("doc_id")
        self.last_int = did if type(did) is int else None
        metrics = self.first_metrics
        resps = first_line.get("resps")
        if (
            self.regrade is not None
            or self.thinking is not None  # each text is split: the generic path
            or not isinstance(metrics, list)
            or not all(isinstance(m, str) for m in metrics)
            or len(set(metrics)) != len(metrics)
            or set(metrics) & _KNOWN_LINE
            or not (isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list))
        ):
            return None
        assert self.primary_filter is not None
        spec = strict_spec(
            first_line,
            self.first_metrics,
            self.primary_filter,
            self.take_first_for(self.primary_filter),
            self.identity,
        )
        self.extra = spec.extra if spec is not None else ()
        return spec

    def _thinking_notes(self, notes: list[str]) -> None:
        """What the import did with lm-eval's ``think_end_token``."""
        end = self.think_end
        if end is None:
            return
        if self.thinking is None:
            notes.append(
                f"lm-eval's think_end_token is {end!r}: rolleval cannot split text at it (a "
                "token id, or no pair); the default thinking delimiters apply"
            )
            return
        notes.append(
            f"lm-eval's think_end_token {end!r}: lm-eval strips each generation up to it "
            "before logging, so the thoughts are absent (N/A); texts are split by "
            f"{list(self.thinking)} here and at --regrade. A thought the chat template opened "
            "and never closed is logged whole by lm-eval and cannot be told from an answer"
        )
        if self.unclosed:
            notes.append(
                f"{self.unclosed} logged response(s) open a thought with "
                f"{self.thinking[0]!r} and never close it: no answer (wrong, unextracted), "
                "whatever lm-eval scored (it graded the thought as the answer)"
            )
        if self.unstripped:
            notes.append(
                f"{self.unstripped} logged response(s) still hold {self.thinking[1]!r} "
                "(lm-eval did not strip them): lm-eval graded the whole text; "
                "pass --regrade TYPE to judge the answer after it alone"
            )

    def finish(self) -> None:
        """Settings, notes and counts of the task, once every line was read."""
        path, name, results, task = self.path, self.name, self.results, self.task
        self.seen = set()  # every doc_id was checked: free it before the report is built
        self.unseen = []
        if self.primary_filter is None:
            raise source_error(
                path, "the samples file holds no samples", "pass a non-empty lm-eval samples file"
            )
        notes = task.notes
        if self.left_out:
            notes.append(
                f"lm-eval scored only the first of up to {self.max_repeats} repeats (take_first): imported n = 1 per problem; "
                f"{self.left_out} later repeats left out (pass --regrade TYPE to judge every repeat)"
            )
            self.unmapped.add(
                "resps[0][1:]", "repeats without a per-repeat score (take_first)", self.left_out
            )
        if self.missing_prompt:
            notes.append("some documents have no logged prompt: those align by doc_id only")
        self._thinking_notes(notes)
        metric_name = self.metric_name
        version = self.version
        cfg = self.cfg
        res = (results.get("results") or {}).get(name) or {}
        source_metrics = {
            k: v
            for k, v in res.items()
            if isinstance(k, str) and k.split(",")[0] == metric_name and "," in k
        }
        sampling = dict(cfg.get("generation_kwargs") or {})
        task.settings = {
            "description": f"lm-eval task {name!r}"
            + (f" (version {version})" if version is not None else ""),
            "grader_identity": self.identity,
            "sampling": sampling or None,
            "source": {
                "harness": "lm-evaluation-harness",
                "task": name,
                "task_version": version,
                "task_hash": (results.get("task_hashes") or {}).get(name),
                "filter": self.primary_filter,
                "metric": metric_name,
                "repeats": cfg.get("repeats"),
                "n_samples": (results.get("n-samples") or {}).get(name),
            },
            "source_file": path.name,
        }
        if self.thinking is not None:
            task.settings["thinking"] = list(self.thinking)
        task.aligned_by = "id" if self.missing_prompt else "content_hash"
        task.source_metrics = source_metrics


def _stream(
    path: Path, results: dict[str, Any], regrade: str | None, task: ImportedTask
) -> Iterator[LineBatch]:
    """Batches of encoded record lines and their report columns, in source order.

    The first line is read by the generic path (it fixes the filter, the metric and the
    shape of a line). The rest is read a chunk at a time: by the column path
    (:mod:`._strict`, in worker processes for a large file) where every line of the chunk
    has the common shape; else, line by line, by the generic path. Both give the same
    records for the same line.
    """
    st = _Samples(path, results, regrade, task)
    B = LineBatch()

    def add(recs: tuple[PromptRecord, list[RolloutRecord], list[JudgementRecord]] | None) -> None:
        if recs is not None:
            p, rs, js = recs
            B.add_lines([line_of(p)], [line_of(r) for r in rs], [line_of(j) for j in js])

    def generic(number: int, raw: bytes, terminated: bool) -> None:
        add(
            st.line(
                number,
                parse_jsonl_line(raw, path=path, line=number, what=_WHAT, terminated=terminated),
            )
        )

    number, start = 0, 0
    line: dict[str, Any] | None = None
    with open(path, "rb") as fh:
        for raw in fh:  # the first line that is not blank: generic
            number += 1
            start += len(raw)
            if raw.strip():
                terminated = raw.endswith(b"\n")
                line = parse_jsonl_line(
                    raw[:-1] if terminated else raw,
                    path=path,
                    line=number,
                    what=_WHAT,
                    terminated=terminated,
                )
                add(st.line(number, line))
                break
    if line is None:
        st.finish()  # no samples: refused there
        return
    spec = st.strict(line)
    size = os.path.getsize(path)
    parallel: Converted | None = None
    chunks: Iterable[Chunk]
    if spec is not None and size - start >= _PARALLEL_BYTES and (cpus := usable_cpus()) > 1:
        if B.n_problems:  # the first line's records go to the files before any worker's
            B.pad()
            yield B
            B = LineBatch()
        parallel = Converted(
            str(path),
            start,
            number + 1,
            StrictChunks,
            spec,
            workers=cpus,
            size=_CHUNK,
            sink=task.record_files,
        )
        parallel.release(-1, st.last_int)
        chunks = parallel
    else:
        converter = StrictChunks(spec) if spec is not None else None
        chunks = serial_chunks(str(path), start, number + 1, converter, _CHUNK)
    with open(path, "rb") as fh, contextlib.closing(iter(chunks)) as stream:  # type: ignore[type-var]
        for first, offset, length, chunk, terminated, out, segment, last, written in stream:
            if written:  # a worker put its records in the files: only the columns are here
                if not apply(st, out, B):
                    raise RuntimeError(f"{path}: records written out of order (a bug)")
            elif out is not None and apply(st, out, B):
                pass
            else:
                if chunk is None:
                    chunk = os.pread(fh.fileno(), length, offset)
                lines = chunk.split(b"\n")
                end = len(lines) - 1
                for j, raw in enumerate(lines):
                    if not raw.strip():
                        continue
                    generic(first + j, raw, terminated or j < end)
                    if B.n_problems >= _BATCH:
                        B.pad()
                        yield B
                        B = LineBatch()
            if parallel is not None and last and not written:
                # this segment's records were this process's to write: into the files (the
                # writer writes a batch before asking for the next), then the turn moves on
                B.pad()
                yield B
                B = LineBatch()
                parallel.release(segment, st.last_int)
            elif B.n_problems >= _BATCH:
                B.pad()
                yield B
                B = LineBatch()
    if B.n_problems:
        B.pad()
        yield B
    st.finish()


def _extracted(filtered: list[Any]) -> str | None:
    """The extracted answer of a judged rollout from lm-eval's ``filtered_resps``."""
    f0 = filtered[0] if filtered else None
    if isinstance(f0, str):
        return f0.strip() or None
    if isinstance(f0, list) and f0 and isinstance(f0[0], str):
        return f0[0].strip() or None
    if (
        isinstance(filtered, list)
        and filtered
        and all(isinstance(x, list) and x and isinstance(x[0], (int, float)) for x in filtered)
    ):
        # log-likelihood choices: the choice with the highest log-likelihood
        best = max(range(len(filtered)), key=lambda i: filtered[i][0])
        return str(best)
    return None


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
    extracted = _extracted(filtered)
    if extracted is not None:
        rec["extracted"] = extracted
    return JudgementRecord(**rec)
