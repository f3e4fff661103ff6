"""The column path of the lm-eval importer gives exactly what the generic path gives.

Each file is imported three times: as shipped (chunks of common-shape lines on the column
path, byte templates, the report computed from the columns in memory), the same in two
worker processes that append the records to the files themselves, and with the column path
switched off (every line parsed whole and built as pydantic records). Records, content
hashes, the import summary (every unmapped field, by reason and count), task.json and the
reports must agree, and every line of the column-path runs validates against the record
models. tests/importers/test_importers_columns.py compares the two paths on generated chunks.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from conftest import assert_run_valid
from rolleval import import_run, report_run
from rolleval._importers.lmeval import _parallel
from rolleval._importers.lmeval import _samples as _lmeval
from rolleval.errors import DataError

DATA = Path(__file__).parents[1] / "data" / "imports" / "lm-eval"
STREAMS = ("prompts.jsonl", "rollouts.jsonl", "judgements.jsonl")


def _generic(monkeypatch) -> None:
    """The column path off: every line read by the generic path, every doc_id checked
    against the set of those seen (no increasing-id shortcut)."""
    monkeypatch.setattr(_lmeval._Samples, "strict", lambda self, first_line: None)


def _parallel_on(monkeypatch) -> None:
    """The column path in two worker processes, whatever the file's size and the CPUs."""

    class Counted(_parallel.Converted):
        def __init__(self, *args, **kwargs):
            assert kwargs["workers"] == 2
            super().__init__(*args, **kwargs)

        def __iter__(self):
            for chunk in super().__iter__():
                WORKER_CHUNKS.append(chunk.data is None)  # None: a worker converted it
                WRITTEN_CHUNKS.append(chunk.written)  # a worker wrote its records
                yield chunk

    monkeypatch.setattr(_lmeval, "Converted", Counted)
    monkeypatch.setattr(_lmeval, "_PARALLEL_BYTES", 0)
    monkeypatch.setattr(_lmeval, "usable_cpus", lambda: 2)
    monkeypatch.setattr(_parallel, "SEGMENT_BYTES", 8 << 10)


WRITTEN: dict[str, int] = {}  # per path of the last _import_all: chunks a worker wrote
WORKER_CHUNKS: list[bool] = []
WRITTEN_CHUNKS: list[bool] = []
PATHS = {
    "column": lambda m: None,
    "parallel": _parallel_on,
    "generic": _generic,
}


def _import_all(
    source: Path, tmp_path: Path, monkeypatch, paths=tuple(PATHS)
) -> dict[str, tuple[Path, int, int, int]]:
    """Per path: (run, lines the column path took, lines the generic path read, chunks
    converted by a worker process)."""
    runs = {}
    for name in paths:
        column: list[int] = []
        generic: list[int] = []
        real_apply, real_line = _lmeval.apply, _lmeval._Samples.line

        def counting_apply(st, out, batch, column=column, real_apply=real_apply):
            ok = real_apply(st, out, batch)
            column.append(len(out.problem_ids) if ok else 0)
            return ok

        def counting_line(self, number, line, generic=generic, real_line=real_line):
            generic.append(number)
            return real_line(self, number, line)

        WORKER_CHUNKS.clear()
        WRITTEN_CHUNKS.clear()
        with monkeypatch.context() as m:
            m.setattr(_lmeval, "apply", counting_apply)
            m.setattr(_lmeval._Samples, "line", counting_line)
            PATHS[name](m)
            import_run("lm-eval", source, tmp_path / name)
        runs[name] = (tmp_path / name, sum(column), len(generic), sum(WORKER_CHUNKS))
        WRITTEN[name] = sum(WRITTEN_CHUNKS)
    return runs


def _assert_all_same(runs: dict[str, tuple[Path, int, int, int]]) -> None:
    for name, (run, *_) in runs.items():
        if name != "generic":
            _assert_same_run(run, runs["generic"][0])


def _task_dir(run: Path) -> Path:
    (task,) = (run / "tasks").iterdir()
    return task


def _assert_same_run(fast: Path, generic: Path) -> None:
    f, g = _task_dir(fast), _task_dir(generic)
    for name in STREAMS:
        # same records, same order, same keys in the same order (re-dumped: spacing aside)
        fl = [orjson.dumps(orjson.loads(x)) for x in (f / name).read_bytes().splitlines()]
        gl = [orjson.dumps(orjson.loads(x)) for x in (g / name).read_bytes().splitlines()]
        assert fl == gl, name
    # rollouts and judgements are byte-identical; prompts differ only in the spacing of the
    # source's own JSON kept verbatim inside extras (doc and hashes)
    for name in ("rollouts.jsonl", "judgements.jsonl"):
        assert (f / name).read_bytes() == (g / name).read_bytes(), name
    assert (f / "task.json").read_bytes() == (g / "task.json").read_bytes()
    assert (f / "report.json").read_bytes() == (g / "report.json").read_bytes()
    fr, gr = (orjson.loads((r / "report.json").read_bytes()) for r in (fast, generic))
    assert fr.pop("run_id") != gr.pop("run_id")
    assert fr == gr
    fm = orjson.loads((fast / "manifest.json").read_bytes())
    gm = orjson.loads((generic / "manifest.json").read_bytes())
    assert fm["import"] == gm["import"]
    assert_run_valid(fast)


@pytest.mark.parametrize("variant", ["seed1", "seed2", "degraded"])
def test_real_lmeval_files_import_the_same_on_every_path(variant, tmp_path, monkeypatch):
    runs = _import_all(DATA / variant, tmp_path, monkeypatch)
    # every line after the first took the column path, in this process or in the workers
    assert runs["column"][1] == runs["parallel"][1] == 99
    assert runs["column"][2] == runs["parallel"][2] == 1  # the generic path read the first
    assert runs["generic"][1:3] == (0, 100)
    assert runs["parallel"][3] > 0 and runs["column"][3] == 0
    assert WRITTEN["parallel"] > 0  # the workers appended records to the files themselves
    fast = runs["parallel"][0]
    _assert_all_same(runs)
    hashes = [
        orjson.loads(x)["content_hash"]
        for x in (_task_dir(fast) / "prompts.jsonl").read_bytes().splitlines()
    ]
    assert len(set(hashes)) == 100 and all(len(h) == 64 for h in hashes)


@pytest.mark.parametrize("source", ["seed1", "awkward"])
def test_report_from_memory_equals_report_recomputed_from_disk(source, tmp_path):
    """The import computes its report from the columns it wrote; `rolleval report` reading
    the files back writes the same bytes."""
    src = DATA / source if source != "awkward" else _awkward_source(tmp_path / "src").parent
    import_run("lm-eval", src, tmp_path / "r")
    written = {
        p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "r").rglob("report.json")
    }
    assert len(written) == 2
    result = report_run(tmp_path / "r")  # from the files
    assert result.warnings == []
    again = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "r").rglob("report.json")}
    assert again == written


# --- a file of awkward lines, long enough to span many chunks ----------------------------


def _line(i: int, extra: bool = True, **over) -> dict:
    content = f'Answer with one word.\nQ: What colour is thing {i}? é漢🙂 "q" \\ \t\nA:'
    line = {
        "doc_id": i,
        "doc": {"id": f"t-{i}", "answer": "red", "n": [1, 2.5, None]},
        "target": "red",
        "arguments": {
            "gen_args_0": {
                "arg_0": [json.dumps([{"role": "user", "content": content}])],
                "arg_1": {"until": ["\n"]},
            }
        },
        "resps": [["red", "blue"]],
        "filtered_resps": ["red "],
        "filter": "last-word",
        "metrics": ["exact_match", "f1"],
        "doc_hash": "0" * 64,
        "prompt_hash": "1" * 64,
        "target_hash": "2" * 64,
        "exact_match": float(i % 3 == 0),
        "f1": 0.5,
        "task_extra": {"kept": "out"},  # on the first line: not known to the importer
    }
    if not extra:
        del line["task_extra"]
    line.update(over)
    return {k: v for k, v in line.items() if v is not _DROP}


_DROP = object()


def _write_results(folder: Path) -> None:
    results = {
        "configs": {
            "odd": {
                "repeats": 2,
                "filter_list": [
                    {"name": "last-word", "filter": [{"function": "take_first"}]},
                    {"name": "strict", "filter": [{"function": "regex"}]},
                ],
            }
        },
        "versions": {"odd": 2},
        "results": {"odd": {"exact_match,last-word": 0.33}},
    }
    (folder / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(results))


def _awkward_source(
    folder: Path, n: int = 400, every: int = 23, extra: bool = True, skip: tuple[int, ...] = ()
) -> Path:
    """Samples whose line i is awkward in way ``i % every`` (kinds 1 to 16, but not those in
    ``skip``); ``extra``: every line has a key the importer does not know (so only the
    generic path reads the file)."""
    folder.mkdir()
    _write_results(folder)
    rows: list[str] = []
    for i in range(n):
        over: dict = {}
        kind = i % every
        if kind in skip:
            kind = 0
        if i and kind == 1:
            over = {"surprise": i}  # a key not on the first line
        elif i and kind == 2:
            over = {"task_extra": _DROP}  # the first line's unknown key, absent here
        elif kind == 3:
            over = {"filter": "strict"}  # another filter: left out, counted
        elif kind == 4:
            over = {"exact_match": None}  # no value
        elif kind == 5:
            over = {"exact_match": "n/a"}  # not a number
        elif kind == 6:
            over = {"arguments": [["plain text prompt " + str(i), {"until": []}]]}
        elif kind == 7:
            over = {"target": 7, "filtered_resps": [["seven"]]}
        elif kind == 8:
            over = {"arguments": {"gen_args_0": {"arg_0": ["[not json"]}}}
        elif kind == 9:
            over = {"exact_match": True, "metrics": ["exact_match"], "f1": _DROP}
        elif kind == 10:
            over = {"resps": [["only one"]], "exact_match": 0.25}  # a graded score
        elif kind == 11:
            over = {"doc_id": f"id-{i}"}
        elif kind == 12:
            over = {"doc": _DROP, "doc_hash": None}
        elif kind == 13:
            over = {"resps": [[]], "filtered_resps": []}
        elif kind == 14:
            over = {"arguments": {"gen_args_0": {"arg_0": [json.dumps([{"role": "user"}])]}}}
        elif kind == 15:
            over = {"filtered_resps": ["   "]}
        text = json.dumps(_line(i, extra, **over), ensure_ascii=i % 2 == 0)
        rows.append(text)
        if kind == 16:
            rows.append("")  # a blank line
    samples = folder / "samples_odd_2026-01-01T00-00-00.000000.jsonl"
    samples.write_text("\n".join(rows) + "\n")
    return samples


def test_awkward_lines_import_the_same_on_every_path(tmp_path, monkeypatch):
    _awkward_source(tmp_path / "src")
    runs = _import_all(tmp_path / "src", tmp_path, monkeypatch)
    assert {runs[p][1] for p in PATHS} == {0}  # a key the column path refuses
    assert {runs[p][2] for p in PATHS} == {400}  # every line by the generic path
    _assert_all_same(runs)
    fast = runs["column"][0]
    summary = orjson.loads((fast / "manifest.json").read_bytes())["import"]["tasks"]["odd"]
    unmapped = {(u["field"], u["reason"]): u["count"] for u in summary["unmapped"]}
    # counted from the file by hand: i % 23 == k for i in 0..399, i > 0 where the key is
    # the first line's own
    per_kind = {k: sum(1 for i in range(400) if i % 23 == k) for k in range(23)}
    known = "field not known to the importer"
    assert unmapped[("surprise", known)] == per_kind[1]
    # on every line but those without it (kind 2) and those of another filter (kind 3)
    assert unmapped[("task_extra", known)] == 400 - per_kind[2] - per_kind[3]
    assert (
        unmapped[("lines of other filters", "only filter 'last-word' is imported")] == (per_kind[3])
    )
    assert unmapped[("metric value", "missing or not a number")] == per_kind[4] + per_kind[5]
    assert (
        "f1 (per-sample metric)",
        "only the first metric, exact_match, decides correctness",
    ) in (unmapped)
    assert summary["problems"] == 400 - per_kind[3]


@pytest.mark.parametrize("extra", [False, True], ids=["common-keys", "an-extra-key"])
def test_rare_awkward_lines_among_common_ones_import_the_same_on_every_path(
    extra, tmp_path, monkeypatch
):
    """Chunks of the common shape take the column path (with ``extra``, every line also has
    a key the importer does not map, counted once per line on both paths); a chunk with
    any awkward line (one of each kind, every 150 lines) is read by the generic path, in
    the same order."""
    _awkward_source(tmp_path / "src", n=3000, every=150, extra=extra)
    runs = _import_all(tmp_path / "src", tmp_path, monkeypatch)
    for name in ("column", "parallel"):
        column, generic = runs[name][1], runs[name][2]
        assert column > 1500 and generic > 150, (name, column, generic)
    assert runs["parallel"][3] > 10  # by the workers
    _assert_all_same(runs)
    summary = orjson.loads((runs["parallel"][0] / "manifest.json").read_bytes())["import"]
    unmapped = {u["field"]: u["count"] for u in summary["tasks"]["odd"]["unmapped"]}
    # every line but those without it (kind 2) and those of another filter (kind 3)
    assert unmapped.get("task_extra", 0) == (3000 - 20 - 20 if extra else 0)


def test_segments_written_by_workers_and_by_this_process_interleave(tmp_path, monkeypatch):
    """Awkward lines the generic path reads (another key, another filter, a partial score,
    no answer, no doc, ...) leave the doc_ids increasing, so the workers go on writing the
    segments they converted whole, between those this process writes. (A string doc_id or
    a repeated one makes every later id a set lookup, here: then this process writes
    everything after it.)"""
    _awkward_source(tmp_path / "src", n=3000, every=150, extra=False, skip=(11,))
    runs = _import_all(tmp_path / "src", tmp_path, monkeypatch)
    assert WRITTEN["parallel"] > 10
    assert runs["parallel"][2] > 100  # and this process read the awkward ones
    assert runs["generic"][1] == 0
    _assert_all_same(runs)


def _errors(source: Path, tmp_path: Path, monkeypatch) -> dict[str, str]:
    """The one-line error of importing ``source`` on each path (none leaves a run behind)."""
    errors = {}
    for name, switch in PATHS.items():
        with monkeypatch.context() as m:
            switch(m)
            with pytest.raises(DataError) as err:
                import_run("lm-eval", source, tmp_path / name)
        errors[name] = str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    return errors


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda rows: rows.insert(300, rows[250]), "duplicate doc_id"),
        (lambda rows: rows.__setitem__(300, rows[300][:-30]), "not valid JSON"),
        (lambda rows: rows.__setitem__(399, rows[399][:-30]), "truncated"),
        (lambda rows: rows.__setitem__(300, '{"doc_id": 1}'), "no 'doc_id' or 'resps'"),
    ],
    ids=["duplicate", "bad-json", "truncated", "not-a-sample"],
)
@pytest.mark.parametrize("extra", [True, False], ids=["generic", "columns"])
def test_bad_lines_deep_in_a_file_are_the_same_one_line_errors(
    edit, message, extra, tmp_path, monkeypatch
):
    samples = _awkward_source(tmp_path / "src", every=150, extra=extra)
    rows = samples.read_text().split("\n")[:-1]
    rows = [r for r in rows if r]
    edit(rows)
    tail = "" if message == "truncated" else "\n"
    samples.write_text("\n".join(rows) + tail)
    errors = _errors(tmp_path / "src", tmp_path, monkeypatch)
    assert len(set(errors.values())) == 1, errors
    assert message in errors["generic"] and f"{samples}:" in errors["generic"]


@pytest.mark.parametrize("extra", [True, False], ids=["generic", "columns"])
def test_invalid_utf8_deep_in_a_file_is_refused_on_every_path(extra, tmp_path, monkeypatch):
    samples = _awkward_source(tmp_path / "src", every=150, extra=extra)
    data = samples.read_bytes().replace(b'"t-300"', b'"t-\xff00"')
    samples.write_bytes(data)
    errors = _errors(tmp_path / "src", tmp_path, monkeypatch)
    assert len(set(errors.values())) == 1, errors
    assert "not valid JSON" in errors["generic"]


_SAMPLES_NAME = "samples_odd_2026-01-01T00-00-00.000000.jsonl"


@pytest.mark.parametrize(
    "edit",
    [
        lambda rows: rows.insert(300, rows[250]),  # an earlier integer id again
        lambda rows: rows.insert(300, rows[0]),  # the first line's id (read by the generic path)
        lambda rows: rows.insert(
            300, json.dumps(_line(350, False, doc_id="350"))
        ),  # a string id, then the integer
        lambda rows: rows.insert(300, json.dumps(_line(380, False, surprise=1))),  # generic, ahead
        lambda rows: rows.insert(
            300, json.dumps(_line(380, False)) + "\n" + json.dumps(_line(380, False))
        ),
    ],
    ids=["earlier-int", "first-line", "string-then-int", "generic-ahead", "twice-ahead"],
)
def test_duplicate_ids_among_increasing_integer_ids_are_found(edit, tmp_path, monkeypatch):
    """Increasing integer doc_ids are new without a set lookup; every way a repeated id can
    come back after them is still the generic path's one-line error."""
    (tmp_path / "src").mkdir()
    _write_results(tmp_path / "src")
    rows = [json.dumps(_line(i, extra=False)) for i in range(400)]
    edit(rows)
    (tmp_path / "src" / _SAMPLES_NAME).write_text("\n".join(rows) + "\n")
    errors = _errors(tmp_path / "src", tmp_path, monkeypatch)
    assert len(set(errors.values())) == 1, errors
    assert "duplicate doc_id" in errors["generic"]


def test_integer_ids_out_of_order_import_the_same_on_every_path(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    _write_results(tmp_path / "src")
    ids = [*range(300), 1000, *range(300, 400), -5, "x", 2000, 1999, *range(3000, 3400)]
    rows = [json.dumps(_line(7, False, doc_id=i)) for i in ids]
    (tmp_path / "src" / _SAMPLES_NAME).write_text("\n".join(rows) + "\n")
    runs = _import_all(tmp_path / "src", tmp_path, monkeypatch)
    assert runs["generic"][2] == len(ids)
    assert all(runs[p][1] > 300 for p in ("column", "parallel"))
    _assert_all_same(runs)
    assert orjson.loads((runs["column"][0] / "manifest.json").read_bytes())["import"]["totals"][
        "problems"
    ] == len(ids)
