"""Synthetic run directories: realistic records with known ground truth, no model needed.

Used by the test suite, the benchmarks and ``rolleval example``. Each problem ``i`` has a true
success rate ``p_i ~ Beta(a, b)``; rollouts succeed independently with that rate; failures
are injected at the given rates. The answers are small integers so that the math grader can
regrade them: a correct rollout answers ``\\boxed{<gold>}``, a wrong one a wrong number, an
unextracted one prose without a number.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import orjson

from ._version import __version__
from .records import content_hash
from .store import RunDir, atomic_write_json

__all__ = ["true_rates", "write_synthetic_run"]

_GRADER_SPEC = {"type": "math", "extractors": ["boxed", "answer_line", "last_number"]}


def write_synthetic_run(
    path: str | os.PathLike[str],
    *,
    n_problems: int = 50,
    n_rollouts: int = 8,
    task: str = "synthetic_math",
    seed: int = 0,
    beta: tuple[float, float] = (2.0, 2.0),
    shift: float = 0.0,
    p_infra_error: float = 0.0,
    p_grader_error: float = 0.0,
    p_unextracted: float = 0.0,
    p_truncated: float = 0.0,
    torn_tail: bool = False,
    duplicates: int = 0,
    clusters: int | None = None,
    judgements: bool = True,
    true_rates: np.ndarray | None = None,
    outcome_seed: int | None = None,
) -> RunDir:
    """Write a synthetic run directory at ``path`` and return it.

    ``shift`` is added to every true rate (clipped to [0, 1]): two runs with the same ``seed``
    for the rates but different ``shift`` model a baseline and a regressed candidate.
    ``true_rates`` overrides the Beta draw. Problems (gold answers, true rates) come from
    ``seed``; rollout outcomes from ``outcome_seed`` (default: ``seed``), so two runs with the
    same ``seed`` and different ``outcome_seed`` are two samplings of the same benchmark.
    """
    rng = np.random.default_rng(seed)
    p = rng.beta(*beta, size=n_problems)
    golds = [str(int(g)) for g in rng.integers(1, 1000, size=n_problems)]
    if true_rates is not None:
        p = np.asarray(true_rates, float)
    p = np.clip(p + shift, 0.0, 1.0)
    run = RunDir.create(
        path,
        {
            "run_id": f"synthetic-{seed}",
            "rolleval_version": __version__,
            "status": "completed",
            "config": {"model": "synthetic", "n_rollouts": n_rollouts, "seed": seed},
            "tasks": [task],
            "provenance": {"source": "rolleval.synthetic"},
        },
    )
    tf = run.task(task)
    tf.dir.mkdir(parents=True)
    ids = [f"{task}/{i:06d}" for i in range(n_problems)]
    prompts: list[bytes] = []
    hashes: dict[str, str] = {}
    for i, pid in enumerate(ids):
        prompt = [{"role": "user", "content": f"Synthetic problem {i}: what is the answer?"}]
        h = content_hash(prompt, golds[i])
        hashes[pid] = h
        rec: dict[str, Any] = {
            "problem_id": pid,
            "prompt": prompt,
            "reference": golds[i],
            "content_hash": h,
        }
        if clusters:
            rec["cluster"] = f"c{i % clusters}"
        prompts.append(orjson.dumps(rec) + b"\n")
    tf.prompts.write_bytes(b"".join(prompts))

    T, K = n_problems, n_rollouts
    rng = np.random.default_rng(seed if outcome_seed is None else [seed, outcome_seed])
    u = rng.random((T, K))
    correct = u < p[:, None]
    infra = rng.random((T, K)) < p_infra_error
    gerr = (rng.random((T, K)) < p_grader_error) & ~infra
    unext = (rng.random((T, K)) < p_unextracted) & ~correct
    trunc = rng.random((T, K)) < p_truncated
    wrong_pick = rng.integers(0, 3, size=(T, K))  # wrong answers vote among 3 values
    tokens = rng.integers(20, 400, size=(T, K))
    roll_lines: list[bytes] = []
    judge_lines: list[bytes] = []
    grader_identity = "math@synthetic"
    for i, pid in enumerate(ids):
        gold = int(golds[i])
        clusters_seen: dict[str, int] = {}
        for j in range(K):
            if infra[i, j]:
                roll_lines.append(
                    orjson.dumps(
                        {
                            "problem_id": pid,
                            "index": j,
                            "status": "infra_error",
                            "error": "HTTP 503 after 5 retries",
                        }
                    )
                    + b"\n"
                )
                judge_lines.append(
                    orjson.dumps(
                        {
                            "problem_id": pid,
                            "index": j,
                            "status": "infra_error",
                            "grader": grader_identity,
                        }
                    )
                    + b"\n"
                )
                continue
            if correct[i, j]:
                ans: str | None = str(gold)
            elif unext[i, j]:
                ans = None
            else:
                ans = str(gold + 1 + int(wrong_pick[i, j]))
            text = (
                f"Reasoning... so the answer is \\boxed{{{ans}}}."
                if ans is not None
                else "I am not sure."
            )
            finish = "length" if trunc[i, j] else "stop"
            roll_lines.append(
                orjson.dumps(
                    {
                        "problem_id": pid,
                        "index": j,
                        "status": "ok",
                        "text": text,
                        "finish_reason": finish,
                        "usage": {"prompt_tokens": 30, "completion_tokens": int(tokens[i, j])},
                        "latency_s": float(tokens[i, j]) / 100.0,
                        "seed": seed * 1_000_003 + i * 1009 + j,
                    }
                )
                + b"\n"
            )
            jrec: dict[str, Any] = {
                "problem_id": pid,
                "index": j,
                "status": "ok",
                "finish_reason": finish,
                "output_tokens": int(tokens[i, j]),
                "grader": grader_identity,
            }
            if gerr[i, j]:
                jrec["grader_error"] = "timeout after 30s"
            else:
                if ans is not None:
                    jrec["extracted"] = ans
                    jrec["cluster"] = clusters_seen.setdefault(ans, j)
                jrec["correct"] = bool(correct[i, j])
            judge_lines.append(orjson.dumps(jrec) + b"\n")
    # duplicates: repeat the first `duplicates` judgement lines (with flipped verdicts: must be ignored)
    for line in judge_lines[:duplicates]:
        rec = orjson.loads(line)
        if "correct" in rec:
            rec["correct"] = not rec["correct"]
        judge_lines.append(orjson.dumps(rec) + b"\n")
    tf.rollouts.write_bytes(b"".join(roll_lines))
    if judgements:
        data = b"".join(judge_lines)
        if torn_tail:
            data += b'{"problem_id": "' + ids[0].encode() + b'", "index": 0, "sta'
        tf.judgements.write_bytes(data)
    atomic_write_json(
        tf.task_json,
        {
            "name": task,
            "n_rollouts": n_rollouts,
            "grader": _GRADER_SPEC,
            "grader_identity": grader_identity,
            "denominator_policy": "judged",
            "score_key": "correct",
            "problem_hashes": hashes,
            "source": {"generator": "rolleval.synthetic", "seed": seed},
        },
    )
    return run


def true_rates(
    n_problems: int, *, seed: int = 0, beta: tuple[float, float] = (2.0, 2.0)
) -> np.ndarray:
    """The true per-problem rates :func:`write_synthetic_run` draws for ``seed``."""
    return np.random.default_rng(seed).beta(*beta, size=n_problems)
