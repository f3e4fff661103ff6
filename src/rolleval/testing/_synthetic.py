"""Synthetic run directories: realistic records with known ground truth, no model needed.

Used by the test suite, the benchmarks and ``rolleval example``. Every record is written
through the record models and :class:`rolleval.rundir.RunWriter`, like a real run's. Each problem ``i`` has a true
success rate ``p_i ~ Beta(a, b)``; rollouts succeed independently with that rate; failures
are injected at the given rates. The answers are small integers so that the math grader can
regrade them: a correct rollout answers ``\\boxed{<gold>}``, a wrong one a wrong number, an
unextracted one prose without a number.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._version import __version__
from ..records import (
    JudgementRecord,
    PromptRecord,
    RolloutRecord,
    RunManifest,
    RunSummary,
    TaskSettings,
    Usage,
)
from ..rundir._store import RunDir
from ..rundir._writer import RunWriter

__all__ = ["true_rates", "write_synthetic_run"]

_GRADER_SPEC = {"type": "math", "extractors": ["boxed", "answer_line", "last_number"]}
_GRADER_IDENTITY = "math@synthetic"
_CHUNK = 1 << 14


def write_synthetic_run(
    path: str | os.PathLike[str],
    *,
    n_problems: int = 50,
    n_rollouts: int = 8,
    task: str = "synthetic_math",
    rng: int = 0,
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
    outcome_rng: int | None = None,
    run_seed: int | None = None,
) -> RunDir:
    """Write a synthetic run directory at ``path`` and return it.

    ``rng`` (and ``outcome_rng``) are int seeds: they are recorded in the run (its id, the
    manifest's seed, each rollout's seed); ``rolleval example --seed`` sets ``rng`` and
    ``--sampling-seed`` ``outcome_rng``. The run id names them and ``shift``
    (``synthetic-0-sampling-1-shift-0.05``), so two runs of an A/A pair are told apart.

    ``shift`` is added to every true rate (clipped to [0, 1]): two runs with the same ``rng``
    for the rates but different ``shift`` model a baseline and a regressed candidate.
    ``true_rates`` overrides the Beta draw. Problems (gold answers, true rates) come from
    ``rng``; rollout outcomes from ``outcome_rng`` (default: ``rng``), so two runs with the
    same ``rng`` and different ``outcome_rng`` are two samplings of the same benchmark.
    ``run_seed`` is the run seed the manifest records (default ``rng``): replicate runs of
    one benchmark (``compare --baseline-replicate``) record distinct seeds.
    """
    gen = np.random.default_rng(rng)
    p = gen.beta(*beta, size=n_problems)
    golds = [str(int(g)) for g in gen.integers(1, 1000, size=n_problems)]
    if true_rates is not None:
        p = np.asarray(true_rates, float)
    p = np.clip(p + shift, 0.0, 1.0)
    run_id = f"synthetic-{rng}"
    if outcome_rng is not None:
        run_id += f"-sampling-{outcome_rng}"
    if shift:
        run_id += f"-shift{shift:+g}"
    if run_seed is not None:
        run_id += f"-seed-{run_seed}"
    manifest = RunManifest(
        run_id=run_id,
        rolleval_version=__version__,
        status="completed",
        config=RunSummary(
            model="synthetic", n_rollouts=n_rollouts, seed=rng if run_seed is None else run_seed
        ),
        provenance={"source": "rolleval.synthetic"},
    )
    ids = [f"{task}/{i:06d}" for i in range(n_problems)]
    prompts = [
        PromptRecord.build(
            pid,
            [{"role": "user", "content": f"Synthetic problem {i}: what is the answer?"}],
            golds[i],
            cluster=f"c{i % clusters}" if clusters else None,
        )
        for i, pid in enumerate(ids)
    ]
    hashes: dict[str, str] = {}
    for rec in prompts:
        assert rec.content_hash is not None  # PromptRecord.build always sets it
        hashes[rec.problem_id] = rec.content_hash
    settings = TaskSettings(
        name=task,
        n_rollouts=n_rollouts,
        grader=_GRADER_SPEC,
        grader_identity=_GRADER_IDENTITY,
        denominator_policy="judged",
        score_key="correct",
        problem_hashes=hashes,
        source={"generator": "rolleval.synthetic", "seed": rng},
    )

    T, K = n_problems, n_rollouts
    gen = np.random.default_rng(rng if outcome_rng is None else [rng, outcome_rng])
    u = gen.random((T, K))
    correct = u < p[:, None]
    infra = gen.random((T, K)) < p_infra_error
    gerr = (gen.random((T, K)) < p_grader_error) & ~infra
    unext = (gen.random((T, K)) < p_unextracted) & ~correct
    trunc = gen.random((T, K)) < p_truncated
    wrong_pick = gen.integers(0, 3, size=(T, K))  # wrong answers vote among 3 values
    tokens = gen.integers(20, 400, size=(T, K))
    writer = RunWriter.create(path, manifest, command="example")
    tw = writer.add_task(settings, prompts)
    rollouts: list[RolloutRecord] = []
    verdicts: list[JudgementRecord] = []
    first: list[JudgementRecord] = []  # the judgements repeated as duplicates

    def flush() -> None:
        tw.add_rollouts(rollouts)
        if judgements:
            tw.add_judgements(verdicts)
        if len(first) < duplicates:
            first.extend(verdicts[: duplicates - len(first)])
        rollouts.clear()
        verdicts.clear()

    try:
        for i, pid in enumerate(ids):
            if len(rollouts) >= _CHUNK:
                flush()  # written a chunk at a time: memory stays flat for million-rollout runs
            gold = int(golds[i])
            clusters_seen: dict[str, int] = {}
            for j in range(K):
                if infra[i, j]:
                    rollouts.append(
                        RolloutRecord(
                            problem_id=pid,
                            index=j,
                            status="infra_error",
                            error="HTTP 503 after 5 retries",
                        )
                    )
                    verdicts.append(
                        JudgementRecord(
                            problem_id=pid, index=j, status="infra_error", grader=_GRADER_IDENTITY
                        )
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
                n_tokens = int(tokens[i, j])
                rollouts.append(
                    RolloutRecord(
                        problem_id=pid,
                        index=j,
                        status="ok",
                        text=text,
                        finish_reason=finish,
                        usage=Usage(prompt_tokens=30, completion_tokens=n_tokens),
                        latency_s=n_tokens / 100.0,
                        seed=rng * 1_000_003 + i * 1009 + j,
                    )
                )
                verdict: dict[str, Any] = {}
                if gerr[i, j]:
                    verdict["grader_error"] = "timeout after 30s"
                else:
                    if ans is not None:
                        verdict["extracted"] = ans
                        verdict["cluster"] = clusters_seen.setdefault(ans, j)
                    verdict["correct"] = bool(correct[i, j])
                verdicts.append(
                    JudgementRecord(
                        problem_id=pid,
                        index=j,
                        status="ok",
                        finish_reason=finish,
                        output_tokens=n_tokens,
                        grader=_GRADER_IDENTITY,
                        **verdict,
                    )
                )
    except BaseException:
        writer.close()  # nothing is left behind: the partial directory is removed
        raise
    flush()
    # duplicates: repeat the first `duplicates` judgements with flipped verdicts (must be ignored)
    with writer:
        if judgements and first:
            tw.add_judgements(
                [
                    v.model_copy(update={"correct": not v.correct}) if v.correct is not None else v
                    for v in first
                ]
            )
        run = writer.finish()
    if judgements and torn_tail:
        # a fault on purpose: the torn last line a process killed mid-write leaves behind
        with open(run.task(task).judgements, "ab") as fh:
            fh.write(b'{"problem_id": "' + ids[0].encode() + b'", "index": 0, "sta')
    return run


def true_rates(
    n_problems: int, *, rng: int = 0, beta: tuple[float, float] = (2.0, 2.0)
) -> np.ndarray:
    """The true per-problem rates :func:`write_synthetic_run` draws for ``rng``."""
    return np.random.default_rng(rng).beta(*beta, size=n_problems)
