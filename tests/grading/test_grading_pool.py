"""Grading in worker processes: equivalence with in-process grading, timeouts, crashes.

The scripted graders below are test doubles at our own seam (``Grader.grade_problem``);
they live at module level so the ``spawn`` workers can unpickle them. Nothing here asserts
on wall-clock durations.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time

import pytest

from conftest import call_in_thread
from rolleval.errors import RunError, UsageError
from rolleval.grading import (
    GradingPool,
    MathGrader,
    McqGrader,
    ShortAnswerGrader,
    default_workers,
    grade_problems,
)

pytest.importorskip("math_verify")


class ScriptedGrader(ShortAnswerGrader):
    """A short-answer grader that misbehaves on request, keyed by the reference."""

    def grade_problem(self, reference, rollouts):
        if reference == "sleep":
            time.sleep(60)
        elif reference == "crash":
            os._exit(13)
        elif reference == "raise":
            raise RuntimeError("boom")
        elif reference == "usage":
            raise UsageError("bad call")
        elif reference == "partial":
            return {}
        return super().grade_problem(reference, rollouts)


class BrokenWarmUpGrader(ShortAnswerGrader):
    def warm_up(self):
        raise RuntimeError("cannot warm up")


ROLLOUTS = [(0, "Paris"), (1, "London"), (2, "paris.")]


@pytest.fixture(scope="module")
def scripted_pool():
    with GradingPool(ScriptedGrader(), workers=2, timeout=3.0) as pool:
        yield pool


def _assert_paris(judgements):
    assert [judgements[i].correct for i in range(3)] == [True, False, True]
    assert [judgements[i].cluster for i in range(3)] == [0, 1, 0]


def test_timeout_marks_every_rollout_and_the_pool_recovers(scripted_pool):
    futures = [scripted_pool.submit(ref, ROLLOUTS) for ref in ("Paris", "sleep", "Paris")]
    _assert_paris(futures[0].result())
    timed_out = futures[1].result()
    assert sorted(timed_out) == [0, 1, 2]
    for judgement in timed_out.values():
        assert judgement.grader_error == "timeout after 3s"
        assert judgement.correct is None and judgement.cluster is None
    _assert_paris(futures[2].result())
    # the killed worker was replaced: the pool keeps grading
    _assert_paris(scripted_pool.submit("Paris", ROLLOUTS).result())


def test_worker_crash_is_a_grader_error_and_the_pool_recovers(scripted_pool):
    crashed = scripted_pool.submit("crash", ROLLOUTS).result()
    assert all(v.grader_error.startswith("grader worker process died") for v in crashed.values())
    _assert_paris(scripted_pool.submit("Paris", ROLLOUTS).result())


def test_grader_exception_becomes_grader_error(scripted_pool):
    judgements = scripted_pool.submit("raise", ROLLOUTS).result()
    assert {v.grader_error for v in judgements.values()} == {"grader crashed: RuntimeError: boom"}


def test_missing_verdicts_are_filled_with_grader_errors(scripted_pool):
    judgements = scripted_pool.submit("partial", ROLLOUTS).result()
    assert sorted(judgements) == [0, 1, 2]
    assert {v.grader_error for v in judgements.values()} == {
        "grader returned no judgement for this rollout"
    }


def test_usage_error_in_the_grader_propagates(scripted_pool):
    with pytest.raises(UsageError, match="bad call"):
        scripted_pool.submit("usage", ROLLOUTS).result()


def test_bad_rollouts_are_refused_at_submit(scripted_pool):
    with pytest.raises(UsageError):
        scripted_pool.submit("Paris", [(0, "a"), (0, "b")])
    assert scripted_pool.submit("Paris", []).result() == {}


def test_worker_that_cannot_start_fails_the_pool():
    with GradingPool(BrokenWarmUpGrader(), workers=1) as pool:
        future = pool.submit("Paris", ROLLOUTS)
        with pytest.raises(RunError, match="could not start: RuntimeError: cannot warm up"):
            future.result()
        with pytest.raises(RunError):
            pool.submit("Paris", ROLLOUTS).result()


def test_unpicklable_grader_is_refused():
    class LocalGrader(ShortAnswerGrader):
        pass

    with pytest.raises(UsageError, match="cannot be sent to worker processes"):
        GradingPool(LocalGrader(), workers=1)
    # in the calling thread it is fine
    assert next(grade_problems(LocalGrader(), [("Paris", ROLLOUTS)], workers=0))[0].correct


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": -1}, "workers must be None"),
        ({"workers": 1.5}, "workers must be None"),
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": float("inf")}, "timeout must be"),
    ],
)
def test_pool_argument_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        grade_problems(ShortAnswerGrader(), [], **kwargs)


def test_submit_after_close_is_refused():
    pool = GradingPool(ShortAnswerGrader(), workers=0)
    pool.close()
    with pytest.raises(UsageError, match="closed"):
        pool.submit("Paris", ROLLOUTS)


def test_default_workers():
    assert default_workers(McqGrader()) == 0
    assert default_workers(ShortAnswerGrader()) == 0
    assert 1 <= default_workers(MathGrader()) <= 8


# --------------------------------------------------------------------------- real math path

MATH_BATCH = [
    (r"\frac12", [(0, r"\boxed{\frac{1}{2}}"), (1, "The answer is 0.5"), (2, "#### 1/2")]),
    ("7", [(3, r"\boxed{7}"), (0, "Answer: 3"), (1, "#### 7.0"), (2, "no idea")]),
    ("1234", [(0, "#### 1,234"), (1, r"\boxed{1234}"), (2, "so 1233")]),
    (r"\text{}", [(0, r"\boxed{1}")]),  # unusable gold
    (["2", "-2"], [(0, r"\boxed{-2}"), (1, r"\boxed{2}"), (2, r"\boxed{\sqrt{4}}")]),
    (r"\sqrt{2}", [(i, rf"\boxed{{{i}}}") for i in range(6)]),
    ("0", []),
]


def test_process_pool_equals_in_process_grading():
    grader = MathGrader()
    inline = list(grade_problems(grader, MATH_BATCH, workers=0))
    pooled = list(grade_problems(grader, MATH_BATCH, workers=2))
    assert pooled == inline
    assert len(inline) == len(MATH_BATCH)
    assert inline[0][2].cluster == 0 and inline[0][2].correct
    assert inline[3][0].grader_error is not None
    assert [inline[4][i].correct for i in range(3)] == [True, True, True]


def test_real_math_problem_past_the_deadline_times_out():
    pathological = [(0, r"\boxed{9^{9^{9}}}"), (1, r"\boxed{1}")]
    with GradingPool(MathGrader(), workers=1, timeout=1.0) as pool:
        slow = pool.submit("1", pathological)
        after = pool.submit("1", [(0, r"\boxed{1}")])
        assert {v.grader_error for v in slow.result().values()} == {"timeout after 1s"}
        assert after.result()[0].correct is True


def test_pool_submit_from_asyncio():
    async def main():
        with GradingPool(MathGrader(), workers=1) as pool:
            futures = [
                asyncio.wrap_future(pool.submit(ref, rollouts)) for ref, rollouts in MATH_BATCH
            ]
            return await asyncio.gather(*futures)

    results = asyncio.run(main())
    assert results == list(grade_problems(MathGrader(), MATH_BATCH, workers=0))


def test_in_process_pool_used_off_the_main_thread_grades_in_a_worker_process():
    """A workers=0 pool made on the main thread and used from another: the math grader
    cannot grade there (math-verify's alarm), so the pool grades in one worker process, with
    the judgements of in-thread grading (before: a UsageError for every problem)."""
    with GradingPool(MathGrader(), workers=0) as pool:
        results = call_in_thread(
            lambda: [pool.submit(ref, rollouts).result() for ref, rollouts in MATH_BATCH]
        )
        assert pool.workers == 1
    assert results == list(grade_problems(MathGrader(), MATH_BATCH, workers=0))


def test_in_process_pool_made_off_the_main_thread_uses_a_worker_process():
    def made_and_used_in_a_thread():
        with GradingPool(MathGrader(), workers=0) as pool:
            return pool.workers, [pool.submit(ref, rolls).result() for ref, rolls in MATH_BATCH]

    workers, results = call_in_thread(made_and_used_in_a_thread)
    assert workers == 1
    assert results == list(grade_problems(MathGrader(), MATH_BATCH, workers=0))
    # a grader that can grade in any thread keeps workers=0 (the calling thread)
    assert call_in_thread(lambda: GradingPool(ScriptedGrader(), workers=0).workers) == 0


def test_unpicklable_main_thread_grader_off_the_main_thread_fails_at_the_start():
    class LocalMath(MathGrader):  # defined in a function: cannot be sent to a worker
        pass

    with pytest.raises(UsageError, match=r"cannot be sent to worker processes.*module level"):
        call_in_thread(GradingPool, LocalMath(), workers=0)
    assert GradingPool(LocalMath(), workers=0).workers == 0  # the main thread grades it


def test_pathological_math_off_the_main_thread_is_still_cut_off():
    """grade_problems(workers=0) from a thread: 9^(9^9) (~370 million digits) is stopped by
    the per-problem deadline of the worker process (or math-verify's 5 s alarm in it), a
    grader error, and the next problem is graded (the bound, 1 s, is not a timing claim)."""
    pathological = [(0, r"\boxed{9^{9^{9}}}"), (1, r"\boxed{1}")]
    items = [("1", pathological), ("1", [(0, r"\boxed{1}")])]
    slow, after = call_in_thread(
        lambda: list(grade_problems(MathGrader(), items, workers=0, timeout=1.0))
    )
    assert {v.grader_error for v in slow.values()} == {"timeout after 1s"}
    assert after[0].correct is True


def test_abandoned_iterator_stops_its_workers():
    """Closing the iterator mid-batch kills the worker that is busy grading (it would sleep
    for 60 s): the process is gone afterwards and died of SIGKILL, not of finishing."""
    before = set(multiprocessing.active_children())
    items = [("Paris", ROLLOUTS), ("sleep", ROLLOUTS), ("sleep", ROLLOUTS), ("Paris", ROLLOUTS)]
    results = grade_problems(ScriptedGrader(), items, workers=1, timeout=30.0)
    _assert_paris(next(results))
    workers = set(multiprocessing.active_children()) - before
    assert len(workers) == 1  # workers=1, started by the first next()
    (worker,) = workers
    assert worker.is_alive()
    results.close()  # kills the sleeping worker instead of waiting for it
    worker.join(timeout=30)  # a bound for a slow machine, not a timing claim
    assert not worker.is_alive()
    assert worker.exitcode == -signal.SIGKILL
    assert set(multiprocessing.active_children()) - before == set()
