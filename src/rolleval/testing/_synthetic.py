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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import UsageError
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
from ..rundir._writer import RunWriter, TaskWriter

__all__ = ["SyntheticOptions", "true_rates", "write_synthetic_run"]

_GRADER_SPEC = {"type": "math", "extractors": ["boxed", "answer_line", "last_number"]}
_GRADER_IDENTITY = "math@synthetic"
_CHUNK = 1 << 14


@dataclass(frozen=True)
class SyntheticOptions:
    """What :func:`write_synthetic_run` writes: the benchmark, the model's true rates, the
    faults injected and the seeds.

    ``rng`` and ``outcome_rng`` are int seeds: they are recorded in the run (its id, the
    manifest's seed, each rollout's seed); ``rolleval example --seed`` sets ``rng`` and
    ``--sampling-seed`` ``outcome_rng``. The run id names them and ``shift``
    (``synthetic-0-sampling-1-shift-0.05``), so two runs of an A/A pair are told apart.
    """

    n_problems: int = 50
    """Problems in the task."""
    n_rollouts: int = 8
    """Rollouts per problem."""
    task: str = "synthetic_math"
    """The task's name (problem ids are ``<task>/000000``, ...)."""
    rng: int = 0
    """Seed of the problems: gold answers and true rates (and of the outcomes, unless
    ``outcome_rng`` is set)."""
    beta: tuple[float, float] = (2.0, 2.0)
    """``(a, b)`` of the Beta distribution the true per-problem rates are drawn from."""
    shift: float = 0.0
    """Added to every true rate (clipped to [0, 1]): two runs with the same ``rng`` and
    different ``shift`` model a baseline and a regressed candidate."""
    p_infra_error: float = 0.0
    """Chance that a rollout fails in the harness (``infra_error``, no text)."""
    p_grader_error: float = 0.0
    """Chance that the grader fails on a completed rollout (no judgement)."""
    p_unextracted: float = 0.0
    """Chance that a wrong rollout answers in prose, with no number to extract."""
    p_truncated: float = 0.0
    """Chance that a rollout is cut at ``max_tokens`` (``finish_reason`` ``length``)."""
    torn_tail: bool = False
    """End judgements.jsonl with a torn line, as a process killed mid-write leaves it."""
    duplicates: int = 0
    """Repeat the first ``duplicates`` judgements with ``correct`` flipped (a reader must
    ignore the repeats)."""
    clusters: int | None = None
    """Declare ``clusters`` problem clusters (problem ``i`` in ``c<i mod clusters>``)."""
    judgements: bool = True
    """Write judgements (``False``: an ungraded run, rollouts only)."""
    true_rates: tuple[float, ...] | None = None
    """True per-problem rates instead of the Beta draw (before ``shift``); any sequence of
    numbers is kept as a tuple."""
    outcome_rng: int | None = None
    """Seed of the rollout outcomes (default: ``rng``): the same ``rng`` with two
    ``outcome_rng`` is two samplings of one benchmark (an A/A pair)."""
    run_seed: int | None = None
    """The run seed the manifest records (default ``rng``): replicate runs of one benchmark
    (``compare --baseline-replicate``) record distinct seeds; the run id names it."""

    def __post_init__(self) -> None:
        if self.true_rates is not None:
            rates = tuple(np.asarray(self.true_rates, float).tolist())
            object.__setattr__(self, "true_rates", rates)


def write_synthetic_run(
    path: str | os.PathLike[str],
    options: SyntheticOptions | None = None,
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
    true_rates: Sequence[float] | np.ndarray | None = None,
    outcome_rng: int | None = None,
    run_seed: int | None = None,
) -> RunDir:
    """Write a synthetic run directory at ``path`` and return it.

    Pass the :class:`SyntheticOptions`, or its fields as keywords (each keyword is the
    field of that name): not both. Problems (gold answers, true rates) come from ``rng``;
    rollout outcomes from ``outcome_rng`` (default: ``rng``). ``run_seed`` is the run seed
    the manifest records (default ``rng``): replicate runs of one benchmark
    (``compare --baseline-replicate``) record distinct seeds.
    """
    keywords = SyntheticOptions(
        n_problems=n_problems,
        n_rollouts=n_rollouts,
        task=task,
        rng=rng,
        beta=beta,
        shift=shift,
        p_infra_error=p_infra_error,
        p_grader_error=p_grader_error,
        p_unextracted=p_unextracted,
        p_truncated=p_truncated,
        torn_tail=torn_tail,
        duplicates=duplicates,
        clusters=clusters,
        judgements=judgements,
        true_rates=None if true_rates is None else tuple(true_rates),
        outcome_rng=outcome_rng,
        run_seed=run_seed,
    )
    if options is None:
        options = keywords
    elif keywords != SyntheticOptions():
        raise UsageError("write_synthetic_run: pass SyntheticOptions or keywords, not both")
    return _write(path, options)


def _write(path: str | os.PathLike[str], options: SyntheticOptions) -> RunDir:
    problems = _draw_problems(options)
    outcomes = _draw_outcomes(options, problems.rates)
    writer = RunWriter.create(path, _manifest(options), command="example")
    tw = writer.add_task(_task_settings(options, problems.prompts), problems.prompts)
    chunks = _Chunks(tw, options)
    try:
        for i, pid in enumerate(problems.ids):
            if len(chunks.rollouts) >= _CHUNK:
                chunks.flush()  # written a chunk at a time: memory stays flat for million-rollout runs
            _add_problem(chunks, options, outcomes, i, pid, int(problems.golds[i]))
    except BaseException:
        writer.close()  # nothing is left behind: the partial directory is removed
        raise
    chunks.flush()
    # duplicates: repeat the first `duplicates` judgements with `correct` flipped (must be ignored)
    with writer:
        if options.judgements and chunks.first:
            tw.add_judgements(
                [
                    v.model_copy(update={"correct": not v.correct}) if v.correct is not None else v
                    for v in chunks.first
                ]
            )
        run = writer.finish()
    if options.judgements and options.torn_tail:
        # a fault on purpose: the torn last line a process killed mid-write leaves behind
        with open(run.task(options.task).judgements, "ab") as fh:
            fh.write(b'{"problem_id": "' + problems.ids[0].encode() + b'", "index": 0, "sta')
    return run


@dataclass(frozen=True)
class _Problems:
    ids: list[str]
    golds: list[str]
    rates: np.ndarray
    """True success rate of each problem (shifted, in [0, 1])."""
    prompts: list[PromptRecord]


def _draw_problems(options: SyntheticOptions) -> _Problems:
    """The problems ``options.rng`` draws: gold answers and true rates, and their prompts."""
    gen = np.random.default_rng(options.rng)
    p = gen.beta(*options.beta, size=options.n_problems)
    golds = [str(int(g)) for g in gen.integers(1, 1000, size=options.n_problems)]
    if options.true_rates is not None:
        p = np.asarray(options.true_rates, float)
    p = np.clip(p + options.shift, 0.0, 1.0)
    ids = [f"{options.task}/{i:06d}" for i in range(options.n_problems)]
    clusters = options.clusters
    prompts = [
        PromptRecord.build(
            pid,
            [{"role": "user", "content": f"Synthetic problem {i}: what is the answer?"}],
            golds[i],
            cluster=f"c{i % clusters}" if clusters else None,
        )
        for i, pid in enumerate(ids)
    ]
    return _Problems(ids, golds, p, prompts)


def _manifest(options: SyntheticOptions) -> RunManifest:
    run_id = f"synthetic-{options.rng}"
    if options.outcome_rng is not None:
        run_id += f"-sampling-{options.outcome_rng}"
    if options.shift:
        run_id += f"-shift{options.shift:+g}"
    if options.run_seed is not None:
        run_id += f"-seed-{options.run_seed}"
    return RunManifest(
        run_id=run_id,
        rolleval_version=__version__,
        status="completed",
        config=RunSummary(
            model="synthetic",
            n_rollouts=options.n_rollouts,
            seed=options.rng if options.run_seed is None else options.run_seed,
        ),
        provenance={"source": "rolleval.synthetic"},
    )


def _task_settings(options: SyntheticOptions, prompts: list[PromptRecord]) -> TaskSettings:
    hashes: dict[str, str] = {}
    for rec in prompts:
        assert rec.content_hash is not None  # PromptRecord.build always sets it
        hashes[rec.problem_id] = rec.content_hash
    return TaskSettings(
        name=options.task,
        n_rollouts=options.n_rollouts,
        grader=_GRADER_SPEC,
        grader_identity=_GRADER_IDENTITY,
        denominator_policy="judged",
        score_key="correct",
        problem_hashes=hashes,
        source={"generator": "rolleval.synthetic", "seed": options.rng},
    )


@dataclass(frozen=True)
class _Outcomes:
    """What happens to each rollout (arrays of shape (problems, rollouts))."""

    correct: np.ndarray
    infra_error: np.ndarray
    grader_error: np.ndarray
    unextracted: np.ndarray
    truncated: np.ndarray
    wrong_pick: np.ndarray
    """Which of 3 wrong answers a wrong rollout gives (so wrong answers split their votes)."""
    tokens: np.ndarray


def _draw_outcomes(options: SyntheticOptions, rates: np.ndarray) -> _Outcomes:
    """Every rollout's outcome, from ``outcome_rng`` (default ``rng``): success with its
    problem's rate, faults at their rates."""
    T, K = options.n_problems, options.n_rollouts
    seed = options.rng if options.outcome_rng is None else [options.rng, options.outcome_rng]
    gen = np.random.default_rng(seed)
    u = gen.random((T, K))
    correct = u < rates[:, None]
    infra = gen.random((T, K)) < options.p_infra_error
    gerr = (gen.random((T, K)) < options.p_grader_error) & ~infra
    unext = (gen.random((T, K)) < options.p_unextracted) & ~correct
    trunc = gen.random((T, K)) < options.p_truncated
    wrong_pick = gen.integers(0, 3, size=(T, K))
    tokens = gen.integers(20, 400, size=(T, K))
    return _Outcomes(correct, infra, gerr, unext, trunc, wrong_pick, tokens)


class _Chunks:
    """Records waiting to be written, and the first judgements kept to repeat."""

    def __init__(self, tw: TaskWriter, options: SyntheticOptions) -> None:
        self.tw = tw
        self.write_judgements = options.judgements
        self.duplicates = options.duplicates
        self.rollouts: list[RolloutRecord] = []
        self.judgements: list[JudgementRecord] = []
        self.first: list[JudgementRecord] = []  # the judgements repeated as duplicates

    def flush(self) -> None:
        self.tw.add_rollouts(self.rollouts)
        if self.write_judgements:
            self.tw.add_judgements(self.judgements)
        if len(self.first) < self.duplicates:
            self.first.extend(self.judgements[: self.duplicates - len(self.first)])
        self.rollouts.clear()
        self.judgements.clear()


def _add_problem(
    chunks: _Chunks, options: SyntheticOptions, outcomes: _Outcomes, i: int, pid: str, gold: int
) -> None:
    """Problem ``i``'s rollouts and judgements: an infra error carries no text; a completed
    rollout answers the gold, a wrong number, or prose without one."""
    clusters_seen: dict[str, int] = {}
    for j in range(options.n_rollouts):
        if outcomes.infra_error[i, j]:
            chunks.rollouts.append(
                RolloutRecord(
                    problem_id=pid, index=j, status="infra_error", error="HTTP 503 after 5 retries"
                )
            )
            chunks.judgements.append(
                JudgementRecord(
                    problem_id=pid, index=j, status="infra_error", grader=_GRADER_IDENTITY
                )
            )
            continue
        if outcomes.correct[i, j]:
            ans: str | None = str(gold)
        elif outcomes.unextracted[i, j]:
            ans = None
        else:
            ans = str(gold + 1 + int(outcomes.wrong_pick[i, j]))
        finish = "length" if outcomes.truncated[i, j] else "stop"
        n_tokens = int(outcomes.tokens[i, j])
        chunks.rollouts.append(
            RolloutRecord(
                problem_id=pid,
                index=j,
                status="ok",
                text=(
                    f"Reasoning... so the answer is \\boxed{{{ans}}}."
                    if ans is not None
                    else "I am not sure."
                ),
                finish_reason=finish,
                usage=Usage(prompt_tokens=30, completion_tokens=n_tokens),
                latency_s=n_tokens / 100.0,
                seed=options.rng * 1_000_003 + i * 1009 + j,
            )
        )
        judgement: dict[str, Any] = {}
        if outcomes.grader_error[i, j]:
            judgement["grader_error"] = "timeout after 30s"
        else:
            if ans is not None:
                judgement["extracted"] = ans
                judgement["cluster"] = clusters_seen.setdefault(ans, j)
            judgement["correct"] = bool(outcomes.correct[i, j])
        chunks.judgements.append(
            JudgementRecord(
                problem_id=pid,
                index=j,
                status="ok",
                finish_reason=finish,
                output_tokens=n_tokens,
                grader=_GRADER_IDENTITY,
                **judgement,
            )
        )


def true_rates(
    n_problems: int, *, rng: int = 0, beta: tuple[float, float] = (2.0, 2.0)
) -> np.ndarray:
    """The true per-problem rates :func:`write_synthetic_run` draws for ``rng``."""
    return np.random.default_rng(rng).beta(*beta, size=n_problems)
