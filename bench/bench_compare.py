"""Benchmark: `rolleval compare` against `tracelens compare` on the same pair of runs.

Two synthetic run directories (``rolleval.testing._synthetic.write_synthetic_run``) of 10,000
problems x 16 rollouts: the baseline (shift 0) and a candidate whose true rates are 0.01
lower (shift -0.01), with the same seed, so the problems and the draws are the same; 1% of
rollouts are infra errors, 0.5% grader errors, 5% of the wrong ones unextracted. Both runs
are exported to TraceLens's trials format (one trial per rollout: ``export_tracelens``), and
each tool compares them from its own format as its CLI runs, end to end in a fresh process:

    rolleval:  python -m rolleval compare BASE CAND --threshold T --output X.json
    tracelens: tracelens compare BASE.trials.json CAND.trials.json --threshold T --output Y.json

(TraceLens in the peer venv, ``bash bench/peers/setup.sh``.) Both use B = 10,000 resamples,
seed 0 and the same practical threshold; exit codes 0, 1 and 3 (rolleval) / 0, 1, 2
(TraceLens) are verdicts, not failures. The export is not timed against either side.

Target: rolleval >= 5x faster (best of ``--repeat`` interleaved rounds).

    python bench/bench_compare.py [--problems 10000 --rollouts 16 --repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import SETUP_HINT, venv_bin

TARGET = 5.0
ROLLEVAL_VERDICT_CODES = {0, 1, 3}
TRACELENS_VERDICT_CODES = {0, 1, 2}
# rolleval rollout status -> TraceLens trial status
_STATUS = {"ok": "completed", "infra_error": "infra_error", "timeout": "timeout"}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def export_tracelens(run_dir: str | Path, task: str, out: str | Path) -> int:
    """Write one task of a rolleval run as a TraceLens trials file; return the trial count.

    One trial per rollout: ``task_id`` = problem id, ``run_index`` = rollout index, status
    ``completed`` (or ``infra_error`` / ``timeout``), one outcome from the task's grader
    (``passed`` = correct, ``score`` 1/0; a grader error is an outcome with
    ``grader_error: true``). The provenance carries each problem's content hash (rolleval's
    SHA-256 of prompt + reference) as its task hash, so TraceLens aligns tasks by content.
    Later judgement lines for the same rollout replace earlier ones.
    """
    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    task_dir = run_dir / "tasks" / task
    settings = json.loads((task_dir / "task.json").read_text())
    hashes = {r["problem_id"]: r["content_hash"] for r in _read_jsonl(task_dir / "prompts.jsonl")}
    judged: dict[tuple[str, int], dict[str, Any]] = {}
    for rec in _read_jsonl(task_dir / "judgements.jsonl"):
        judged[(rec["problem_id"], rec["index"])] = rec
    n_runs = int(settings.get("n_rollouts") or manifest.get("config", {}).get("n_rollouts", 1))
    grader_id = settings.get("grader_identity") or settings["grader"]["type"]

    trials = []
    for (pid, index), rec in sorted(judged.items()):
        trial_id = f"{pid}#{index}"
        status = _STATUS.get(rec.get("status", "ok"), "failed")
        outcomes = []
        if status == "completed":
            grader_error = "grader_error" in rec
            passed = bool(rec.get("correct")) and not grader_error
            outcomes.append(
                {
                    "trial_id": trial_id,
                    "grader_id": grader_id,
                    "passed": passed,
                    "score": 1.0 if passed else 0.0,
                    "grader_error": grader_error,
                }
            )
        trials.append(
            {
                "trial_id": trial_id,
                "task_id": pid,
                "run_index": index,
                "total_runs": n_runs,
                "status": status,
                "outcomes": outcomes,
                "error_message": rec.get("error"),
            }
        )
    ordered = "".join(hashes[k] for k in sorted(hashes))
    provenance = {
        "schema_version": 1,
        "run_id": str(manifest.get("run_id", run_dir.name)),
        "tracelens_version": "0.7.0",
        "measurement": {
            "eval_set_name": task,
            "eval_set_hash": settings.get("eval_set_hash")
            or hashlib.sha256(ordered.encode()).hexdigest(),
            "task_hashes": hashes,
            "graders": [
                {
                    "class_path": f"rolleval.grading.{settings['grader']['type']}",
                    "name": grader_id,
                    "version": grader_id,
                }
            ],
            "runner": {
                "num_runs": n_runs,
                "max_concurrency": 1,
                "timeout_seconds": 300.0,
                "max_infra_retries": 0,
            },
        },
        "candidate": {
            "adapter": {
                "class_path": "rolleval._runner",
                "name": str(manifest.get("config", {}).get("model")),
            }
        },
    }
    batch = {"batch_id": provenance["run_id"], "provenance": provenance, "trials": trials}
    Path(out).write_bytes(orjson.dumps(batch))
    return len(trials)


def timed(cmd: list[str], ok_codes: set[int]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in ok_codes:
        raise RuntimeError(
            f"{' '.join(cmd[:3])} ... exited {proc.returncode}:\n{proc.stdout[-2000:]}\n"
            f"{proc.stderr[-2000:]}"
        )
    return seconds, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10_000)
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shift", type=float, default=-0.01, help="candidate's rate shift")
    parser.add_argument("--threshold", type=float, default=0.02, help="passed to both tools")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds per side")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()

    tracelens = venv_bin("tracelens")
    from rolleval.testing._synthetic import write_synthetic_run

    task = "synthetic_math"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        for name, shift in (("baseline", 0.0), ("candidate", args.shift)):
            write_synthetic_run(
                root / name,
                n_problems=args.problems,
                n_rollouts=args.rollouts,
                task=task,
                rng=args.seed,
                shift=shift,
                p_infra_error=0.01,
                p_grader_error=0.005,
                p_unextracted=0.05,
            )
        n = args.problems * args.rollouts
        print(
            f"data: 2 runs of {args.problems:,} problems x {args.rollouts} rollouts "
            f"({n:,} rollouts each; candidate shift {args.shift:+g}, seed {args.seed}), "
            f"written in {time.perf_counter() - start:.1f} s; threshold {args.threshold} "
            "for both, B = 10,000, seed 0"
        )
        rolleval_cmd = [
            sys.executable,
            "-m",
            "rolleval",
            "compare",
            str(root / "baseline"),
            str(root / "candidate"),
            "--threshold",
            str(args.threshold),
            "--output",
            str(root / "rolleval.json"),
        ]
        contenders: dict[str, tuple[list[str], set[int]]] = {
            "rolleval": (rolleval_cmd, ROLLEVAL_VERDICT_CODES)
        }
        if tracelens is None:
            print(f"tracelens: skipped (no peer venv; run: {SETUP_HINT})")
        else:
            start = time.perf_counter()
            for name in ("baseline", "candidate"):
                export_tracelens(root / name, task, root / f"{name}.trials.json")
            size = (root / "baseline.trials.json").stat().st_size / 1e6
            print(
                f"export: both runs to TraceLens trials in {time.perf_counter() - start:.1f} s "
                f"({size:.0f} MB each; not timed against either tool)"
            )
            contenders["tracelens"] = (
                [
                    str(tracelens),
                    "compare",
                    str(root / "baseline.trials.json"),
                    str(root / "candidate.trials.json"),
                    "--threshold",
                    str(args.threshold),
                    "--output",
                    str(root / "tracelens.json"),
                ],
                TRACELENS_VERDICT_CODES,
            )

        best = dict.fromkeys(contenders, float("inf"))
        codes: dict[str, int] = {}
        for _ in range(args.repeat):
            for name, (cmd, ok) in contenders.items():
                seconds, proc = timed(cmd, ok)
                best[name] = min(best[name], seconds)
                codes[name] = proc.returncode

        startup = dict.fromkeys(contenders, float("inf"))
        for _ in range(args.repeat):
            for name, (cmd, _ok) in contenders.items():
                head = cmd[:4] if name == "rolleval" else cmd[:2]
                startup[name] = min(startup[name], timed([*head, "--help"], {0})[0])
        print(
            "(context) CLI start-up, `compare --help`: "
            + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in startup.items())
        )

        ours = json.loads((root / "rolleval.json").read_text())
        t = ours["tasks"][0]
        print(
            f"rolleval verdict: {t['label']} (exit {codes['rolleval']}): effect {t['effect']:+.4f} "
            f"95% CI [{t['ci_low']:+.4f}, {t['ci_high']:+.4f}] over "
            f"{t['alignment']['matched']:,} problems; best of {args.repeat}: "
            f"{best['rolleval']:.2f} s"
        )
        if "tracelens" not in contenders:
            return 0
        print(
            f"tracelens verdict: {_tracelens_summary(root / 'tracelens.json')} "
            f"(exit {codes['tracelens']}); best of {args.repeat}: {best['tracelens']:.2f} s"
        )
    ratio = best["tracelens"] / best["rolleval"]
    met = ratio >= TARGET
    print(
        f"compare: rolleval {best['rolleval']:.2f} s vs tracelens compare "
        f"{best['tracelens']:.2f} s -> {ratio:.1f}x faster (target >= {TARGET:g}x) "
        f"{'met' if met else 'MISSED'} [both end to end as CLI processes, each from its own "
        "format]"
    )
    return 1 if args.strict and not met else 0


def _tracelens_summary(path: Path) -> str:
    """TraceLens's verdict, effect and interval from its --output JSON (0.7.0's keys)."""
    d = json.loads(path.read_text())
    text = str(d.get("verdict"))
    if isinstance(d.get("delta"), (int, float)) and isinstance(d.get("ci_lower"), (int, float)):
        text += (
            f": effect {d['delta']:+.4f} {d.get('confidence', 0.95):.0%} CI "
            f"[{d['ci_lower']:+.4f}, {d['ci_upper']:+.4f}]"
        )
    alignment = d.get("alignment") or {}
    if "compared" in alignment:
        text += f" over {alignment['compared']:,} tasks (aligned by {alignment.get('aligned_by')})"
    return text


if __name__ == "__main__":
    sys.exit(main())
