"""The runner keeps only the problems in flight: nothing it holds grows with the rollouts.

Runs against a real server on 127.0.0.1 (:class:`rolleval.testing.OpenAIServer`); the
retained objects are counted exactly (``gc.get_objects``), not timed. Also: the profile
streamed from the files equals the profile built from record sets, on records with retries,
duplicates and stray indices.
"""

from __future__ import annotations

import gc
import json
import random

import numpy as np
import pytest

from rolleval import build_config, run_eval
from rolleval._runner import Request
from rolleval._runner._finish import _profile, profile_from_files
from rolleval._runner._schedule import Scheduler
from rolleval.grading import Judgement
from rolleval.records import (
    JudgementRecord,
    JudgementSet,
    Profile,
    RolloutRecord,
    RolloutSet,
    Segment,
    Usage,
    dump_record,
)
from rolleval.rundir._store import TaskFiles

N_ROLLOUTS = 4
CONCURRENCY = 4
HELD_TYPES = (RolloutRecord, JudgementRecord, Request, Judgement)


def _live() -> int:
    """Live objects of the per-rollout types (records, requests, judgements)."""
    gc.collect()
    return sum(isinstance(o, HELD_TYPES) for o in gc.get_objects())


def _retained(tmp_path, server, problems: int, monkeypatch) -> dict[str, int]:
    """Run ``problems`` x N_ROLLOUTS rollouts; count per-rollout objects alive while the run
    is three quarters through, and when the scheduler closes (everything requested and
    graded, nothing freed yet), each minus the count before the run."""
    data = tmp_path / f"q{problems}.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i:04d}", "question": f"What is {i}?", "answer": str(i)}) + "\n"
            for i in range(problems)
        )
    )
    config = build_config(
        {
            "model": server.model,
            "endpoints": [server.base_url],
            "tasks": [{"name": "q", "path": str(data), "type": "short_answer", "id_field": "id"}],
            "n_rollouts": N_ROLLOUTS,
            "concurrency": CONCURRENCY,
            "grading_workers": 0,
        }
    )
    total = problems * N_ROLLOUTS
    seen: dict[str, int] = {}
    record, close = Scheduler._record, Scheduler.close
    calls = 0

    def counting_record(self, *args, **kwargs):
        nonlocal calls
        record(self, *args, **kwargs)
        calls += 1
        if calls == 3 * total // 4:
            seen["during"] = _live()

    def counting_close(self, **kwargs):
        seen["at_close"] = _live()
        seen["pending"] = sum(len(p) for p in self._pending)
        seen["final"] = sum(len(f) for f in self._final)
        seen["grading"] = len(self._grading)
        close(self, **kwargs)

    monkeypatch.setattr(Scheduler, "_record", counting_record)
    monkeypatch.setattr(Scheduler, "close", counting_close)
    before = _live()
    outcome = run_eval(config, tmp_path / f"run{problems}", progress=False)
    assert outcome.completed == total and outcome.failed == 0
    return {
        "during": seen["during"] - before,
        "at_close": seen["at_close"] - before,
        "pending": seen["pending"],
        "final": seen["final"],
        "grading": seen["grading"],
    }


def test_runner_holds_no_per_rollout_state(tmp_path, openai_server, monkeypatch):
    small = _retained(tmp_path, openai_server, 25, monkeypatch)
    large = _retained(tmp_path, openai_server, 100, monkeypatch)
    # The in-flight bound: each of the CONCURRENCY workers holds one request and its record,
    # and a problem waits for at most N_ROLLOUTS records before it is graded.
    bound = 4 * (CONCURRENCY + N_ROLLOUTS)
    for counts in (small, large):
        assert counts["during"] <= bound, counts
        assert counts["at_close"] <= bound, counts
        assert counts["pending"] == counts["final"] == counts["grading"] == 0, counts
    # 4x the rollouts (400 vs 100): the old runner held every record, request and judgement
    # (>= 1,200 objects at close for the large run); now the count does not grow.
    assert large["at_close"] <= small["at_close"] + N_ROLLOUTS, (small, large)


def _records(rng: random.Random, n: int):
    """Rollouts with retries, duplicate oks, stray indices and problems, and judgements with
    and without an LLM judge's usage, some duplicated."""
    rollouts, judgements = [], []
    for p in range(30):
        pid = f"p{p:02d}"
        for j in range(n + (1 if p % 7 == 0 else 0)):  # index n: past the requested width
            for attempt in range(1, rng.randint(1, 3) + 1):
                status = rng.choice(["ok", "ok", "ok", "infra_error", "timeout", "skipped"])
                usage = rng.choice(
                    [
                        None,
                        Usage(prompt_tokens=rng.randint(1, 50)),
                        Usage(completion_tokens=7),
                        Usage(
                            prompt_tokens=rng.randint(1, 50), completion_tokens=rng.randint(0, 9)
                        ),
                    ]
                )
                rollouts.append(
                    RolloutRecord(
                        problem_id=pid,
                        index=j,
                        status=status,
                        text="x" if status == "ok" else None,
                        usage=usage,
                        latency_s=rng.choice([None, rng.random()]),
                        attempt=attempt,
                        retries=rng.randint(0, 2),
                        model=rng.choice([None, "m1", "m2"]),
                        system_fingerprint=rng.choice([None, "fp1", "fp2"]),
                    )
                )
            for _ in range(rng.choice([1, 1, 2])):
                judgements.append(
                    JudgementRecord(
                        problem_id=pid,
                        index=j,
                        status="ok",
                        correct=rng.random() < 0.5,
                        grader_usage=rng.choice(
                            [None, Usage(prompt_tokens=rng.randint(1, 90), completion_tokens=3)]
                        ),
                    )
                )
    rng.shuffle(rollouts)
    return rollouts, judgements


# ---------------------------------------------------------------- the profile, streamed


def build_profile(
    rollouts: RolloutSet, segments: list[Segment], judgements: JudgementSet | None = None
) -> Profile:
    """The oracle: the profile computed from record sets in memory, the obvious way (the
    runner streams it from the files instead, with :func:`profile_from_files`)."""
    chosen = rollouts.effective
    ok = [r for r in chosen.values() if r.status == "ok"]
    statuses: dict[str, int] = {}
    for r in chosen.values():
        statuses[r.status] = statuses.get(r.status, 0) + 1

    def ints(values) -> np.ndarray:
        return np.array([v for v in values if v is not None], dtype=np.int64)

    grader_tokens = None
    used = (
        []
        if judgements is None
        else [j.grader_usage for j in judgements.effective.values() if j.grader_usage is not None]
    )
    if used:
        prompt = [u.prompt_tokens for u in used if u.prompt_tokens is not None]
        completion = [u.completion_tokens for u in used if u.completion_tokens is not None]
        grader_tokens = {
            "prompt_total": int(sum(prompt)) if prompt else None,
            "completion_total": int(sum(completion)) if completion else None,
            "calls": len(used),
        }
    return _profile(
        effective=len(chosen),
        attempts=len(rollouts.records),
        statuses=statuses,
        retries=sum(r.retries for r in rollouts.records),
        in_tok=ints(r.usage.prompt_tokens for r in ok if r.usage is not None),
        out_tok=ints(r.usage.completion_tokens for r in ok if r.usage is not None),
        lat=np.array([r.latency_s for r in ok if r.latency_s is not None], dtype=float),
        models={r.model for r in ok if r.model},
        fingerprints={r.system_fingerprint for r in ok if r.system_fingerprint},
        ok=len(ok),
        segments=segments,
        grader_tokens=grader_tokens,
    )


@pytest.mark.parametrize("seed", range(5))
def test_streamed_profile_equals_the_profile_of_the_records(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    n = 3
    rollouts, judgements = _records(rng, n)
    files = TaskFiles(tmp_path)
    files.rollouts.write_bytes(b"".join(map(dump_record, rollouts)))
    files.judgements.write_bytes(b"".join(map(dump_record, judgements)))
    segments = [Segment(started_at="t", seconds=12.5, requested=1)]
    expected = build_profile(RolloutSet.build(rollouts), segments, JudgementSet.build(judgements))
    assert expected.rollouts.attempts == len(rollouts)
    assert profile_from_files(files, segments, n) == expected
    assert profile_from_files(files, segments, 1) == expected  # any slot width gives it
    from rolleval.rundir import _store as store

    monkeypatch.setattr(store, "_CHUNK_BYTES", 97)  # many chunks, boundaries inside lines
    assert profile_from_files(files, segments, n) == expected


def test_streamed_profile_of_a_task_with_no_files(tmp_path):
    segments = [Segment(started_at="t", seconds=1.0, requested=0)]
    assert profile_from_files(TaskFiles(tmp_path), segments, 4) == build_profile(
        RolloutSet.build([]), segments, None
    )


# ---------------------------------------------------------------- reading in chunks


def _jsonl_with_everything(tail: bytes) -> bytes:
    lines = [
        b'{"problem_id": "a", "index": 0, "status": "ok"}',
        b"",
        b'{"problem_id": "b", "index": 1, "status": "timeout", "correct": null}',
        b"   ",
        b'{"problem_id": "' + b"c" * 300 + b'", "index": 2, "status": "ok", "correct": true}',
        b'{"problem_id": "d", "index": 3, "status": "ok", "extracted": "x"}',
    ]
    return (
        b"\n".join(lines)
        + b"\n"
        + b"".join(
            b'{"problem_id": "p%d", "index": %d, "status": "ok"}\n' % (i, i) for i in range(40)
        )
        + tail
    )


@pytest.mark.parametrize(
    "tail",
    [b"", b'{"problem_id": "z", "index": 9, "status": "ok"}', b'{"problem_id": "z", "ind'],
    ids=["newline-ended", "last-line-without-newline", "torn-last-line"],
)
@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_columns_read_in_small_chunks_equal_one_chunk(tmp_path, monkeypatch, tail, chunk):
    """Chunk boundaries (inside lines, at blank lines, before a line longer than the chunk)
    change nothing: the columns, line numbers and torn-line facts of the default chunk size."""
    import warnings

    from rolleval.rundir import _store as store
    from rolleval.rundir._table import ScoredJudgementRow

    path = tmp_path / "judgements.jsonl"
    path.write_bytes(_jsonl_with_everything(tail))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        whole = store.read_jsonl_columns(path, ScoredJudgementRow, presence=("extracted",))
        monkeypatch.setattr(store, "_CHUNK_BYTES", chunk)
        chunked = store.read_jsonl_columns(path, ScoredJudgementRow, presence=("extracted",))
    assert chunked.n == whole.n == 44 + (tail.endswith(b"}"))
    assert chunked.columns == whole.columns
    assert [chunked.line_of(i) for i in range(chunked.n)] == [
        whole.line_of(i) for i in range(whole.n)
    ]
    assert whole.line_of(1) == 3 and whole.line_of(2) == 5  # blank lines skipped, counted
    assert (chunked.torn_line, chunked.torn_bytes) == (whole.torn_line, whole.torn_bytes)
    assert (whole.torn_line is not None) == tail.endswith(b"ind")
    assert whole.columns["extracted"][:4] == [None, None, None, True]  # presence only
    statuses = whole.columns["status"]
    assert statuses[0] is statuses[-1]  # equal strings share one object


def test_a_bad_line_after_many_chunks_is_named_by_its_line(tmp_path, monkeypatch):
    from rolleval.errors import DataError
    from rolleval.rundir import _store as store
    from rolleval.rundir._table import JudgementRow

    good = b'{"problem_id": "p", "index": 0, "status": "ok"}\n'
    path = tmp_path / "judgements.jsonl"
    path.write_bytes(good * 30 + b'{"problem_id": "p", "index": "zero", "status": "ok"}\n' + good)
    monkeypatch.setattr(store, "_CHUNK_BYTES", 100)
    with pytest.raises(DataError, match=r"judgements.jsonl.*31"):
        store.read_jsonl_columns(path, JudgementRow)
