"""Problems needed to detect a serving change by log-prob margin versus by accuracy.

Runs a 0-shot log-likelihood version of ARC-Easy (``Question: ...`` / ``Answer:``, each
choice as the continuation) twice on the embedded model (``--model local``): as served,
and with ``rope_freq_scale: 0.8``. Per problem it pairs the two runs' judgements and, for
each of acc (``correct``) and ``metrics.logprob_margin``, prints the mean paired change,
its standard deviation across problems, and the problems :func:`rolleval.stats.required_problems`
says a two-sided paired test (alpha 0.05, power 0.8) needs to detect that change
(one deterministic attempt per problem: no within-problem variance).

    PYTHONPATH=src python bench/bench_loglik_rope.py --problems 30 --out /tmp/rope
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

from rolleval.stats import required_problems
from rolleval.tasks import _builtin, _olmo


def _rows(path: Path) -> None:
    decl = _builtin._declarations()["tasks"]["arc_easy"]
    rows = _builtin._LOADERS[decl["loader"]](_olmo.resolve_files("arc_easy", decl["data"]))
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def _run(out: Path, data: Path, problems: int, extra: str) -> Path:
    cfg = out.with_suffix(".yaml")
    cfg.write_text(
        f"model: local\nlimit: {problems}\nseed: 1\n"
        f"server_options: {{n_threads: 2{extra}}}\n"
        f"tasks:\n  - {{name: arc_easy_0shot, path: {data}, type: loglik, id_field: id, "
        "answer_format: index}\n"
    )
    if not out.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rolleval",
                "run",
                "--config",
                str(cfg),
                "--out",
                str(out),
                "--no-progress",
            ],
            check=True,
        )
    return out / "tasks" / "arc_easy_0shot" / "judgements.jsonl"


def _by_problem(path: Path) -> dict[str, dict]:
    return {j["problem_id"]: j for j in map(json.loads, path.read_text().splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("/tmp/rolleval-rope"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "arc_easy.jsonl"
    _rows(data)
    base = _by_problem(_run(args.out / "base", data, args.problems, ""))
    cand = _by_problem(_run(args.out / "rope08", data, args.problems, ", rope_freq_scale: 0.8"))
    ids = sorted(set(base) & set(cand))
    series = {
        "acc": [float(cand[i]["correct"]) - float(base[i]["correct"]) for i in ids],
        "logprob_margin": [
            cand[i]["metrics"]["logprob_margin"] - base[i]["metrics"]["logprob_margin"] for i in ids
        ],
    }
    print(f"{len(ids)} problems paired (baseline as served, candidate rope_freq_scale 0.8)")
    for name, d in series.items():
        mean = sum(d) / len(d)
        var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
        if mean == 0.0:
            needed = "N/A (no mean change observed)"
        else:
            needed = str(
                required_problems(
                    abs(mean),
                    omega2=var,
                    sigma2_baseline=0.0,
                    n_rollouts_baseline=1,
                    sigma2_candidate=0.0,
                    n_rollouts_candidate=1,
                )
            )
        print(
            f"{name:15s} mean change {mean:+.4f}  sd {math.sqrt(var):.4f}  "
            f"changed on {sum(1 for x in d if x != 0)}/{len(d)}  problems needed {needed}"
        )


if __name__ == "__main__":
    main()
