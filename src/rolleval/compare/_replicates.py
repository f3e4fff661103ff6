"""Several replicate runs per side of a comparison: pooled counts, and the run-level variance.

``rolleval compare BASE CAND --baseline-replicate DIR ... --candidate-replicate DIR ...``:
the replicates of a side are runs of its configuration that differ only in the run seed.
Per task, each side's correct and judged rollouts are pooled over its runs
(:func:`pool_task`; a problem must be in every run of its side), the problem-level test
runs on the pooled rates, and :meth:`ReplicateCounts.resolve` gives the run-level variance
of the effect, ``v_baseline / n_runs_baseline + v_candidate / n_runs_candidate``, each ``v`` from
:func:`rolleval.stats.run_noise` over that side's own runs when it has two or more
(docs/contract.md, "Run-level noise"). :func:`load_side` reads and checks a side.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import UsageError
from ..stats import RunNoise, run_noise
from ._changed import SideRecord, side_record, what_changed
from ._frame import ProblemFrame, load_frames

__all__ = [
    "REPLICATE_METRIC",
    "ReplicateCounts",
    "RunLevel",
    "SideNoise",
    "SideRuns",
    "load_side",
    "pool_task",
    "run_seed",
    "run_variance_se",
]

#: The one metric replicate runs are pooled for: correct among judged rollouts.
REPLICATE_METRIC = "pass@1"

#: The note of a comparison whose one-run side borrows the other side's run-level variance.
BORROWED_NOTE = (
    "validity: the {one}'s run-level variance is the {other}'s, measured from its {n_runs} runs; "
    "this assumes both sides' endpoints carry the same run-level noise, which one {one} run "
    "cannot check (give --{one}-replicate runs to measure it)"
)

Source = Literal["own replicates", "baseline replicates", "candidate replicates", "run-noise file"]


def run_seed(manifest: Mapping[str, Any]) -> int | None:
    """The run seed a manifest records (``measurement.seed``, else ``config.seed``)."""
    for part in ("measurement", "config"):
        section = manifest.get(part)
        seed = section.get("seed") if isinstance(section, Mapping) else None
        if isinstance(seed, int) and not isinstance(seed, bool):
            return seed
    return None


@dataclass(frozen=True)
class SideRuns:
    """One side of a comparison: its first run and its replicates, as read from disk.

    Attributes
    ----------
    role : {"baseline", "candidate"}
    paths : tuple of str
        The first run, then the replicates, as given.
    seeds : tuple of int or None
        The run seed each records (None: not recorded; only a side of one run).
    frames : tuple of dict
        Each run's :class:`ProblemFrame` by task.
    record : SideRecord
        The first run's recorded settings (what "what changed" compares).
    """

    role: str
    paths: tuple[str, ...]
    seeds: tuple[int | None, ...]
    frames: tuple[dict[str, ProblemFrame], ...]
    record: SideRecord

    @property
    def n_runs(self) -> int:
        return len(self.paths)

    @property
    def summary(self) -> str:
        """``3 runs (seeds 0, 1, 2)``."""
        seeds = ", ".join("unknown" if s is None else str(s) for s in self.seeds)
        word = "seed" if self.n_runs == 1 else "seeds"
        return f"{self.n_runs} run{'s' if self.n_runs > 1 else ''} ({word} {seeds})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.record.label.text,
            "n_runs": self.n_runs,
            "runs": list(self.paths),
            "seeds": list(self.seeds),
            "summary": self.summary,
        }


def _refuse_sequential(path: str, role: str) -> None:
    from ._sequential_run import sequential_design_of

    if sequential_design_of(path) is not None:
        raise UsageError(
            f"{path}: a sequential run (--until-decided) cannot be a {role} replicate (it "
            "stopped on its own comparison); give runs of the full design"
        )


def _check_replicate(path: str, rec: SideRecord, first: SideRuns, role: str) -> None:
    """``UsageError`` when ``rec`` differs from the side's first run in more than the seed."""
    first_path, tasks = first.paths[0], first.frames[0]
    if sorted(rec.tasks) != sorted(tasks):
        raise UsageError(
            f"{path}: tasks {', '.join(sorted(rec.tasks))} differ from the {role}'s first run "
            f"{first_path} ({', '.join(sorted(tasks))}); a replicate must hold the same tasks: "
            "rerun it with the first run's tasks, or leave it out"
        )
    diff = what_changed(first.record, rec, [(t, t) for t in tasks])
    for ch in diff.changes:
        if ch.setting != "run seed":
            raise UsageError(
                f"{path}: {ch.setting} is {ch.candidate} where the {role}'s first run "
                f"{first_path} has {ch.baseline}; a {role} replicate must differ from it only "
                "in the run seed: rerun it with the first run's settings, or leave it out"
            )


def load_side(
    role: str,
    first: str | os.PathLike[str],
    replicates: Sequence[str | os.PathLike[str]] = (),
    *,
    first_frames: dict[str, ProblemFrame] | None = None,
) -> SideRuns:
    """Read a side (its first run and its replicates) and check the replicates.

    Refuses (``UsageError``, exit 2, naming the run directory, the setting and the fix) a
    replicate that is a sequential run, holds other tasks, differs from the first run in a
    recorded setting other than the run seed (:func:`what_changed`), records no run seed,
    or shares its run seed with another run of the side.
    """
    paths = [str(first), *(str(r) for r in replicates)]
    frames0 = first_frames if first_frames is not None else load_frames(first)
    rec0 = side_record(first, {t: fr.settings for t, fr in frames0.items()})
    side = SideRuns(role, (paths[0],), (run_seed(rec0.manifest),), (frames0,), rec0)
    if not replicates:
        return side
    seen: dict[int, str] = {}
    _seed_once(paths[0], side.seeds[0], seen, role)
    seeds, frames = [side.seeds[0]], [frames0]
    for path in paths[1:]:
        _refuse_sequential(path, role)
        fr = load_frames(path)
        rec = side_record(path, {t: f.settings for t, f in fr.items()})
        _check_replicate(path, rec, side, role)
        seed = run_seed(rec.manifest)
        _seed_once(path, seed, seen, role)
        seeds.append(seed)
        frames.append(fr)
    return SideRuns(role, tuple(paths), tuple(seeds), tuple(frames), rec0)


def _seed_once(path: str, seed: int | None, seen: dict[int, str], role: str) -> None:
    if seed is None and os.path.isfile(path):
        raise UsageError(
            f"{path}: this baseline file records no run seed, so it cannot be shown to be a "
            f"distinct {role} replicate; give the run directory instead, or save the baseline "
            "from a run that records its seed (`rolleval run --seed S`, then `rolleval "
            "baseline save`)"
        )
    if seed is None:
        raise UsageError(
            f"{path}: records no run seed, so it cannot be shown to be a distinct {role} "
            "replicate; replicates must be runs with recorded, distinct seeds "
            "(`rolleval run --seed S`)"
        )
    if seed in seen:
        raise UsageError(
            f"{path}: run seed {seed} is also the seed of {seen[seed]}; the {role}'s "
            "replicates must have distinct run seeds: rerun it with another --seed, or leave "
            "it out"
        )
    seen[seed] = path


def refuse_metric(metric: str, frames: Sequence[ProblemFrame]) -> None:
    """``UsageError`` unless ``metric`` is pass@1 of correct/judged counts (what pools)."""
    if metric != REPLICATE_METRIC:
        raise UsageError(
            f"replicate runs (--baseline-replicate/--candidate-replicate) pool correct and "
            f"judged rollouts, which gives {REPLICATE_METRIC}; --metric {metric} cannot be "
            f"pooled over runs: compare {REPLICATE_METRIC}, or one run per side"
        )
    for fr in frames:
        key = fr.settings.get("score_key", "correct")
        if key not in (None, "correct"):
            raise UsageError(
                f"{fr.source}: task {fr.task!r} scores {key!r}, not correct/judged rollouts; "
                "replicate runs pool correct counts only: compare one run per side"
            )


# --------------------------------------------------------------------------- pooling


@dataclass(frozen=True)
class PooledTask:
    """One task of a side pooled over its runs: the frame and the per-run count matrices
    (``n_runs x T``, columns in the frame's problem order)."""

    frame: ProblemFrame
    c: np.ndarray
    n: np.ndarray


def pool_task(frames: Sequence[ProblemFrame]) -> PooledTask:
    """Pool one task of a side's runs: per problem, correct and judged rollouts summed.

    The problems are those present in every run (sorted id order); a problem's content hash
    must agree across the runs (``UsageError`` otherwise). The pooled frame carries pass@1
    (``C_i / N_i``, NaN when ``N_i = 0``), the summed counts and health counts of the first
    run's settings, source and identity; votes are not pooled.
    """
    first = frames[0]
    common = set(first.ids)
    for fr in frames[1:]:
        common &= set(fr.ids)
    ids = sorted(common)
    idx = [_positions(fr, ids) for fr in frames]
    hashes = [first.hashes[i] for i in idx[0]]
    for fr, ix in zip(frames[1:], idx[1:]):
        for pid, h0, i in zip(ids, hashes, ix):
            h = fr.hashes[i]
            if h is not None and h0 is not None and h != h0:
                raise UsageError(
                    f"{fr.source}: task {fr.task!r} problem {pid!r} has other content than in "
                    f"{first.source}; replicates must ask the same problems: rerun it on the "
                    "same data, or leave it out"
                )

    def stack(name: str) -> np.ndarray:
        return np.array([np.asarray(getattr(fr, name))[ix] for fr, ix in zip(frames, idx)])

    c, n = stack("c"), stack("n")
    big_c, big_n = c.sum(axis=0), n.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(big_n > 0, big_c / np.maximum(big_n, 1), np.nan)
    health = {
        name: tuple(
            sum(np.asarray(fr.health[name][j], dtype=float)[ix] for fr, ix in zip(frames, idx))
            for j in (0, 1)
        )
        for name in first.health
        if all(name in fr.health for fr in frames)
    }
    statuses = [fr.run_status for fr in frames]
    frame = ProblemFrame(
        task=first.task,
        ids=ids,
        hashes=hashes,
        clusters=[first.clusters[i] for i in idx[0]],
        n=big_n,
        c=big_c,
        requested=stack("requested").sum(axis=0),
        values={REPLICATE_METRIC: rate},
        health=health,  # type: ignore[arg-type]
        gradable=stack("gradable").sum(axis=0),
        unjudged=stack("unjudged").sum(axis=0),
        missing=stack("missing").sum(axis=0),
        settings=dict(first.settings),
        source=first.source,
        kind=first.kind,
        run_id=first.run_id,
        model=first.model,
        run_status=next((s for s in statuses if s not in (None, "completed")), statuses[0]),
    )
    return PooledTask(frame, c, n)


def _positions(fr: ProblemFrame, ids: list[str]) -> list[int]:
    pos = {pid: i for i, pid in enumerate(fr.ids)}
    return [pos[pid] for pid in ids]


# --------------------------------------------------------------------------- run level


@dataclass(frozen=True)
class SideNoise:
    """The run-level variance of one side's run mean, and where it comes from.

    Attributes
    ----------
    n_runs : int
        The side's runs.
    measured : RunNoise or None
        :func:`rolleval.stats.run_noise` over the side's own runs (``n_runs >= 2``), on the
        compared problems every run of the side judged; None for one run, or when no
        compared problem was judged in every run.
    variance : float or None
        ``v`` used for the side (None: none known).
    source : str or None
        ``"own replicates"``, ``"baseline replicates"``/``"candidate replicates"`` (the
        other side's, for a side of one run) or ``"run-noise file"``.
    """

    n_runs: int
    measured: RunNoise | None
    variance: float | None
    source: Source | None

    def to_dict(self) -> dict[str, Any]:
        m = self.measured
        return {
            "n_runs": self.n_runs,
            "variance": self.variance,
            "source": self.source,
            "measured": None if m is None else m.to_dict(),
        }


@dataclass(frozen=True)
class RunLevel:
    """A comparison's run-level variance from replicate runs (:meth:`ReplicateCounts.resolve`).

    ``run_variance = v_baseline / n_runs_baseline + v_candidate / n_runs_candidate`` (0 when neither
    side has a ``v``); ``run_variance_se`` its standard error as an estimate:
    ``sqrt(sum_m 2 a_m^2 S_m^4 / (k_m - 1))`` over the measured sides ``m``, with ``S_m^2``
    the sample variance of their run means and ``a_m`` the sum of ``1/n_runs`` over the sides
    using ``v_m`` (a file's ``v`` counts as known). ``notes`` say where each ``v`` comes
    from and what it assumes.
    """

    baseline: SideNoise
    candidate: SideNoise
    run_variance: float
    run_variance_se: float
    notes: tuple[str, ...]

    @property
    def measured(self) -> bool:
        """Both sides' ``v`` measured from their own replicates (nothing assumed)."""
        return self.baseline.source == "own replicates" == self.candidate.source

    @property
    def known(self) -> bool:
        return self.baseline.variance is not None and self.candidate.variance is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "run_variance": self.run_variance,
            "run_variance_se": self.run_variance_se,
            "formula": "v_baseline / n_runs_baseline + v_candidate / n_runs_candidate",
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ReplicateCounts:
    """Per-run counts of one task on both sides (``n_runs x T`` each, columns in the pooled
    frames' problem order) and a run-noise file's ``v`` for the task (or None)."""

    c_baseline: np.ndarray
    n_baseline: np.ndarray
    c_candidate: np.ndarray
    n_candidate: np.ndarray
    file_variance: float | None = None

    def resolve(self, pos_baseline: np.ndarray, pos_candidate: np.ndarray) -> RunLevel:
        """The run-level variance of the effect over the aligned problems.

        ``v`` of a side with ``n_runs >= 2`` runs is ``run_noise`` over the compared problems
        (judged on both sides) that every run of the side judged. A side of one run takes
        the run-noise file's ``v`` when given, else the other side's measured ``v``.
        """
        pb, pc = np.asarray(pos_baseline, int), np.asarray(pos_candidate, int)
        compared = (self.n_baseline.sum(axis=0)[pb] >= 1) & (self.n_candidate.sum(axis=0)[pc] >= 1)
        own = {
            "baseline": _measure(self.c_baseline[:, pb], self.n_baseline[:, pb], compared),
            "candidate": _measure(self.c_candidate[:, pc], self.n_candidate[:, pc], compared),
        }
        n_runs = {"baseline": len(self.n_baseline), "candidate": len(self.n_candidate)}
        sides: dict[str, SideNoise] = {}
        for role, other in (("baseline", "candidate"), ("candidate", "baseline")):
            m = own[role]
            if m is not None:
                sides[role] = SideNoise(n_runs[role], m, m.run_variance, "own replicates")
            elif self.file_variance is not None:
                sides[role] = SideNoise(n_runs[role], None, self.file_variance, "run-noise file")
            elif own[other] is not None:
                src: Source = (
                    "baseline replicates" if other == "baseline" else "candidate replicates"
                )
                sides[role] = SideNoise(n_runs[role], None, own[other].run_variance, src)  # type: ignore[union-attr]
            else:
                sides[role] = SideNoise(n_runs[role], None, None, None)
        b, c = sides["baseline"], sides["candidate"]
        rv = 0.0
        if b.variance is not None and c.variance is not None:
            rv = b.variance / b.n_runs + c.variance / c.n_runs
        notes = tuple(_notes(b, c, rv, self.file_variance is not None))
        return RunLevel(b, c, rv, _estimate_se(sides), notes)


def _estimate_se(sides: dict[str, SideNoise]) -> float:
    """Standard error of ``run_variance`` from the measured sides' run-mean variances
    (:func:`run_variance_se`)."""
    parts = []
    for role, side in sides.items():
        m = side.measured
        if m is None:
            continue
        weight = sum(
            1.0 / s.n_runs
            for r, s in sides.items()
            if (r == role and s.source == "own replicates") or s.source == f"{role} replicates"
        )
        parts.append((weight, m.variance, m.n_runs))
    return run_variance_se(parts)


def run_variance_se(parts: Sequence[tuple[float, float, int]]) -> float:
    """``sqrt(sum_m 2 (a_m S_m^2)^2 / (r_m - 1))`` over measured sides ``(a_m, S_m^2, r_m)``:
    the standard error of ``run_variance = sum_m a_m v_m`` when ``S_m^2``, the sample
    variance of ``r_m`` run means, is the estimate's random part (``Var(S^2) = 2 sigma^4 /
    (r - 1)`` for normal run means; the binomial part is treated as known). ``a_m`` is the
    sum of ``1/r`` over the sides using side ``m``'s ``v`` (``r``: a side's runs)."""
    total = sum(2.0 * (a * s2) ** 2 / (n_runs - 1) for a, s2, n_runs in parts)
    return float(total**0.5)


def _measure(c: np.ndarray, n: np.ndarray, compared: np.ndarray) -> RunNoise | None:
    if len(n) < 2:
        return None
    cols = compared & np.all(n >= 1, axis=0)
    if not cols.any():
        return None
    return run_noise(c[:, cols], n[:, cols])


def _notes(b: SideNoise, c: SideNoise, rv: float, file_given: bool) -> list[str]:
    parts = f"{_g(b.variance)}/{b.n_runs} + {_g(c.variance)}/{c.n_runs} = {rv:.3g}"
    if b.variance is None or c.variance is None:
        return [
            "run-level variance not measured (no compared problem was scored by every "
            "replicate of a side, and no run-noise file): problem-level test alone"
        ]
    notes = [
        "interval and p-value include the run-level variance of the effect "
        f"v_baseline/n_runs_baseline + v_candidate/n_runs_candidate = {parts}"
    ]
    for side, other in ((b, c), (c, b)):
        if side.source in ("baseline replicates", "candidate replicates"):
            one = "candidate" if side is c else "baseline"
            notes.append(
                BORROWED_NOTE.format(
                    one=one, other=str(side.source).split()[0], n_runs=other.n_runs
                )
            )
        elif side.source == "run-noise file":
            one = "candidate" if side is c else "baseline"
            notes.append(
                f"the {one} (one run) takes its run-level variance from the run-noise file"
            )
    if file_given and "own replicates" in (b.source, c.source):
        notes.append(
            "a side with replicates uses their own run-level variance (a direct measurement), "
            "not the run-noise file's"
        )
    return notes


def _g(v: float | None) -> str:
    return "N/A" if v is None else f"{v:.3g}"
