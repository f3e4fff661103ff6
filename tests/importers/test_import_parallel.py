"""Worker processes of the large-file import (rolleval._importers.lmeval._parallel).

The reader's outputs must not depend on how the file was cut: every line is read exactly
once, in order, with its line number, whatever the segment and chunk sizes, long lines,
blank lines or a last line without a newline. A broken pool (a worker killed) hands the
rest of the file to the reading process; a process running threads spawns its workers.
The lm-eval records made this way are compared with the generic path in
tests/importers/test_importers_fast.py.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rolleval import import_run
from rolleval._importers.lmeval import _parallel
from rolleval._importers.lmeval import _samples as _lmeval
from rolleval.errors import RunError


def _lines_of(chunks) -> list[tuple[int, bytes]]:
    out = []
    for c in chunks:
        for k, line in enumerate(c.data.split(b"\n")):
            out.append((c.number + k, line))
    return out


def _expected(data: bytes, first_number: int) -> list[tuple[int, bytes]]:
    if not data:
        return []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return [(first_number + k, line) for k, line in enumerate(lines)]


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=40),
    head=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"") + b"\n"),
    terminated=st.booleans(),
    segment=st.integers(1, 64),
    size=st.integers(1, 64),
)
def test_segments_and_chunks_cover_every_line_once_in_order(
    lines, head, terminated, segment, size, tmp_path_factory
):
    body = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    path = tmp_path_factory.mktemp("p") / "f.jsonl"
    path.write_bytes(head + body)
    start = len(head)
    # segments as the pool cuts them, chunks as each worker cuts its segment
    got = []
    number = 2
    for a in range(start, start + len(body), segment):
        pos, data = _parallel._segment_data(str(path), start, a, min(a + segment, len(head + body)))
        assert data == b"" or pos >= a
        for off, chunk, t in _parallel._pieces(data, pos, size):
            assert (head + body)[off : off + len(chunk)] == chunk
            assert t == (off + len(chunk) < len(head + body))
            for k, line in enumerate(chunk.split(b"\n")):
                got.append((number + k, line))
            number += chunk.count(b"\n") + 1
    assert got == _expected(body, 2)
    # and the serial reader gives the same
    assert _lines_of(_parallel.serial_chunks(str(path), start, 2, None, size)) == got


class _Out:
    def __init__(self, pid: int, lines: int):
        self.pid, self.lines = pid, lines


class _Upper:
    """A converter for the tests: upper-cases a chunk; kills its own process on a chunk
    holding b"KILL" (as the out-of-memory killer would)."""

    def __init__(self, spec):
        self.spec = spec

    def convert(self, chunk: bytes):
        if b"KILL" in chunk and os.getpid() != self.spec:
            os._exit(9)
        return chunk.upper()

    @staticmethod
    def pack(outs):
        return b"\n".join(outs)

    @staticmethod
    def unpack(packed):
        return packed


def _source(tmp_path: Path, n: int = 3000, kill_at: int | None = None) -> tuple[Path, int]:
    rows = [b"head"] + [
        (b"KILL %d" if i == kill_at else b"line %d with some text") % i for i in range(n)
    ]
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\n".join(rows) + b"\n")
    return path, len(rows[0]) + 1


def _run(path: Path, start: int, *, spec=None) -> list:
    return list(_parallel.Converted(str(path), start, 2, _Upper, spec, workers=2, size=256))


def _check(chunks, path: Path, start: int) -> None:
    body = path.read_bytes()[start:]
    want = _expected(body, 2)
    got = []
    for c in chunks:
        data = c.data if c.data is not None else path.read_bytes()[c.offset : c.offset + c.length]
        assert c.out == data.upper()  # the converter's output belongs to these lines
        got.extend((c.number + k, line) for k, line in enumerate(data.split(b"\n")))
    assert got == want


def test_worker_outputs_come_back_in_file_order(tmp_path, monkeypatch):
    monkeypatch.setattr(_parallel, "SEGMENT_BYTES", 4096)
    path, start = _source(tmp_path)
    chunks = _run(path, start)
    _check(chunks, path, start)
    assert any(c.data is None for c in chunks)  # converted by the workers


def test_a_killed_worker_hands_the_rest_of_the_file_to_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(_parallel, "SEGMENT_BYTES", 4096)
    path, start = _source(tmp_path, kill_at=1500)
    # spec: this process's pid, so the converter kills only a worker, never the reader
    chunks = _run(path, start, spec=os.getpid())
    _check(chunks, path, start)
    assert chunks[0].data is None  # the first segments came from the workers
    assert chunks[-1].data is not None  # the rest from this process, after the kill


def test_a_process_running_threads_spawns_its_workers(tmp_path, monkeypatch):
    methods: list[str] = []
    real = multiprocessing.get_context

    def get_context(method):
        methods.append(method)
        return real(method)

    monkeypatch.setattr(multiprocessing, "get_context", get_context)
    monkeypatch.setattr(_parallel, "SEGMENT_BYTES", 16384)
    path, start = _source(tmp_path, n=2000)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        chunks = _run(path, start)
    finally:
        stop.set()
        other.join()
    _check(chunks, path, start)
    assert methods == ["spawn"]
    if threading.active_count() == 1:
        chunks = _run(path, start)
        _check(chunks, path, start)
        assert methods[-1] == ("fork" if sys.platform.startswith("linux") else "spawn")


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_an_empty_or_tiny_rest_gives_the_same_chunks_serially_and_in_workers(size, tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"head\n" + b"x" * size)  # one line, no newline at the end
    serial = list(_parallel.serial_chunks(str(path), 5, 2, _Upper(None), 256))
    workers = _run(path, 5)
    assert [(c.number, c.offset, c.length, c.terminated, c.out) for c in serial] == [
        (c.number, c.offset, c.length, c.terminated, c.out) for c in workers
    ]
    assert serial[-1].terminated is False


def _samples(folder: Path, n: int) -> None:
    """An lm-eval output folder: one results file, one samples file of the common shape."""
    folder.mkdir()
    (folder / "results_2026-01-01T00-00-00.000000.json").write_text(
        json.dumps({"configs": {"t": {"repeats": 1}}, "versions": {"t": 1}})
    )
    rows = []
    for i in range(n):
        content = f"Q: what colour is thing {i}?\nA:"
        rows.append(
            json.dumps(
                {
                    "doc_id": i,
                    "doc": {"id": i},
                    "target": "red",
                    "arguments": {
                        "gen_args_0": {
                            "arg_0": [json.dumps([{"role": "user", "content": content}])]
                        }
                    },
                    "resps": [["red"]],
                    "filtered_resps": ["red"],
                    "filter": "none",
                    "metrics": ["exact_match"],
                    "doc_hash": "0" * 64,
                    "prompt_hash": "1" * 64,
                    "target_hash": "2" * 64,
                    "exact_match": float(i % 2),
                }
            )
        )
    (folder / "samples_t_2026-01-01T00-00-00.000000.jsonl").write_text("\n".join(rows) + "\n")


def _many_workers(monkeypatch) -> None:
    monkeypatch.setattr(_lmeval, "_PARALLEL_BYTES", 0)
    monkeypatch.setattr(_lmeval, "usable_cpus", lambda: 2)
    monkeypatch.setattr(_parallel, "SEGMENT_BYTES", 8 << 10)


def test_a_worker_that_dies_after_writing_stops_the_import_and_leaves_nothing(
    tmp_path, monkeypatch
):
    _samples(tmp_path / "src", 2000)
    _many_workers(monkeypatch)
    real = _parallel._append_if_turn

    def append_then_die(index, out):
        columns = real(index, out)
        if columns is not None and index == 5:
            os._exit(9)  # killed right after its segment went into the files
        return columns

    monkeypatch.setattr(_parallel, "_append_if_turn", append_then_die)
    with pytest.raises(RunError, match="a worker process of the import died after writing") as err:
        import_run("lm-eval", tmp_path / "src", tmp_path / "out")
    assert err.value.exit_code == 4
    assert str(err.value).count("\n") == 0  # one line, naming the file
    assert str(err.value).startswith(str(tmp_path / "src"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_workers_writing_the_files_give_the_records_of_one_process(tmp_path, monkeypatch):
    _samples(tmp_path / "src", 3000)
    import_run("lm-eval", tmp_path / "src", tmp_path / "one")  # small: one process
    _many_workers(monkeypatch)
    real = _parallel._append_if_turn
    (tmp_path / "marks").mkdir()

    def counting(index, out):
        columns = real(index, out)
        if columns is not None:  # in the worker's own process: a file says it wrote
            (tmp_path / "marks" / str(index)).touch()
        return columns

    monkeypatch.setattr(_parallel, "_append_if_turn", counting)
    import_run("lm-eval", tmp_path / "src", tmp_path / "workers")
    written = sorted(int(p.name) for p in (tmp_path / "marks").iterdir())
    assert len(written) > 10  # most segments went into the files from the workers
    for name in ("prompts.jsonl", "rollouts.jsonl", "judgements.jsonl", "task.json", "report.json"):
        a = (tmp_path / "one" / "tasks" / "t" / name).read_bytes()
        b = (tmp_path / "workers" / "tasks" / "t" / name).read_bytes()
        assert a == b, name
