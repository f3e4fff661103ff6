"""Real-server calibration of ``rolleval compare`` (issue 26): is a no-change comparison on
the embedded model called a change more often than the contract promises, and why?

Runs of one configuration that differ only in the run seed are A/A replicates. For each
*variant* of serving this script reports, over its replicate runs (``--limit`` problems of
``common_knowledge`` x ``-n`` rollouts, the issue's design):

* the variance of pass@1 across seeds against the binomial variance of independent
  rollouts (:func:`rolleval.stats.run_noise`: ratio, chi-square p-value), a permutation
  p-value that needs no binomial model (seed labels permuted within each problem), the
  ratio with each seed left out (is it one outlier seed?), each problem's own ratio and
  the share of the variance that is covariance between problems;
* the A/A false-verdict rate of ``compare_frames`` (what ``rolleval compare`` runs per
  task) over all ordered seed pairs (baseline a, candidate b), per direction, with an SE
  from a bootstrap over seeds (seeds resampled with replacement, pairs of one seed with
  itself left out), against the target alpha/2 + 2 SE per direction.

Variants:

``main``      ``rolleval run --model local`` as a user runs it (a fresh
              ``rolleval._local._serve`` per run, prompt/KV prefix reuse on);
``nocache``   the same server with the KV prefix reuse off (``bench/_fresh_serve.py``:
              every request evaluates its prompt from scratch);
``llamacpp``  llama-cpp-python's own ``python -m llama_cpp.server``;
``main-rerun`` ``main`` again, into its own directory (are runs reproducible?
              ``identity --variant main-rerun``);
``rope``      the quickstart's mis-served candidate: ``main`` with
              ``--server-option rope_freq_scale=0.8`` (a real change, for the power rows
              of the sequential design, and a second A/A configuration of its own);
``scripted``  the control: ``rolleval.testing.OpenAIServer`` answering each rollout
              correctly with probability p_i (the pooled rate of problem i over the
              ``main`` runs found, else Beta(0.5, 2) draws), an independent draw per
              rollout from its seed; it must show no excess.

Identity (``identity``): a variant's runs (finished or stopped part way) against the
``main`` runs of the same seeds, rollout by rollout: identical texts, and whether the
differing ones change correctness (``main-rerun``: ``main`` rerun into
``<out>/main-rerun/seed-<S>``, is a run reproducible?).

Replay (``replay``): rollouts of a stored run asked again one by one, in shuffled order,
each with its stored seed, against a fresh server of a variant; reports how many come back
identical. Identical answers mean the variant cannot change any statistic of those runs.

Regroup (``regroup``): does the grouping of seeds into runs reach the server? A *chimera*
run asks every problem (or, with ``--per-rollout``, every rollout) with the seed it had in a
stored ``main`` run drawn at random, in the runs' own order, on a fresh server, and counts
the answers identical to their seed's own run. All identical means a rollout's answer is a
function of its problem, its index and its seed, in a run's context too: any regrouping of
the stored rollouts (what the permutation tests draw) is a run the server would produce.
``--identity`` (every problem from the first run) checks the harness itself.

    python bench/realmodel_calibration.py run --variant main --seeds 100-115 [--jobs 2]
    python bench/realmodel_calibration.py regroup --seeds 200-231 [--per-rollout | --identity]
    python bench/realmodel_calibration.py replay --run DIR --variant nocache --k 60
    python bench/realmodel_calibration.py run --variant scripted --seeds 0-31
    python bench/realmodel_calibration.py identity --variant nocache
    python bench/realmodel_calibration.py analyze [--seeds 300-331] [--json out.json]

Runs go to ``--out`` (default ``runs/realmodel``) as ``<variant>/seed-<S>``; a finished
run is reused, so the study can be resumed and extended seed by seed. Never pick seeds:
give a contiguous range fixed before looking.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rolleval.compare import compare_frames
from rolleval.compare._frame import frames_from_run
from rolleval.stats import run_noise

TASK = "common_knowledge"
ALPHA = 0.05
VARIANTS = ("main", "main-rerun", "nocache", "llamacpp", "rope", "scripted")
BENCH = Path(__file__).resolve().parent
ROLLEVAL = [sys.executable, "-m", "rolleval"]


def parse_seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


# ----------------------------------------------------------------------- runs


def _server_module(variant: str) -> str:
    return {"nocache": "_fresh_serve", "llamacpp": "llama_cpp.server"}[variant]


def _run_args(args: argparse.Namespace, seed: int, out: Path) -> list[str]:
    return [
        "run",
        "--task",
        TASK,
        "--limit",
        str(args.limit),
        "-n",
        str(args.rollouts),
        "--concurrency",
        "2",
        "--seed",
        str(seed),
        "--no-progress",
        "--out",
        str(out),
    ]


def _done(path: Path) -> bool:
    try:
        return json.loads((path / "manifest.json").read_text()).get("status") == "completed"
    except (OSError, ValueError):
        return False


def run_one(args: argparse.Namespace, variant: str, seed: int, probs: dict[str, float]) -> str:
    out = Path(args.out) / variant / f"seed-{seed}"
    if _done(out):
        return f"{variant} seed {seed}: reused"
    if out.exists():
        out.rename(out.with_name(f"{out.name}.partial-{int(time.time())}"))
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log = open(out.with_suffix(".log"), "w")  # noqa: SIM115
    with log:
        if variant in ("main", "main-rerun", "rope"):
            cmd = [*ROLLEVAL, *_run_args(args, seed, out), "--model", "local"]
            if variant == "rope":
                cmd += ["--server-option", "rope_freq_scale=0.8"]
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        elif variant == "scripted":
            rc = _scripted_run(args, seed, out, probs, log)
        else:
            from rolleval._local._launcher import LOCAL_MODEL_NAME, LocalServer, LocalServerOptions

            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([str(BENCH), env.get("PYTHONPATH", "")])
            opts = LocalServerOptions(server_module=_server_module(variant))
            old = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the server inherits it
            try:
                with LocalServer(opts) as srv:
                    cmd = [
                        *ROLLEVAL,
                        *_run_args(args, seed, out),
                        "--endpoint",
                        srv.base_url,
                        "--model",
                        LOCAL_MODEL_NAME,
                    ]
                    rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
            finally:
                if old is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = old
    return f"{variant} seed {seed}: exit {rc} in {time.monotonic() - t0:.0f} s"


def _uniform(seed: Any, prompt: str) -> float:
    digest = hashlib.sha256(f"{seed}\x00{prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _scripted_run(
    args: argparse.Namespace, seed: int, out: Path, probs: dict[str, float], log: Any
) -> int:
    """The control: independent per-rollout draws, correct with probability p_i."""
    from rolleval.testing import OpenAIServer

    table: dict[str, tuple[str, float]] = {}
    for i, rec in enumerate(_prompts(Path(args.out))):
        text = _prompt_text(rec["prompt"])
        ref = rec["reference"]
        ref = ref[0] if isinstance(ref, list) else str(ref)
        table[text] = (ref, probs.get(rec["problem_id"], _beta_rate(i)))

    def responder(request: dict[str, Any]) -> tuple[str, str]:
        text = _prompt_text(request["messages"])
        ref, p = table[text]
        ok = _uniform(request.get("seed"), text) < p
        return (f"A: {ref}" if ok else "A: zzz"), "stop"

    with OpenAIServer(responder=responder, model="scripted") as srv:
        cmd = [*ROLLEVAL, *_run_args(args, seed, out), "--endpoint", srv.base_url]
        return subprocess.call([*cmd, "--model", "scripted"], stdout=log, stderr=subprocess.STDOUT)


def _prompts(root: Path) -> list[dict[str, Any]]:
    """The problems (prompt, reference) as stored by a finished ``main`` run."""
    for run in sorted((root / "main").glob("seed-*")):
        if run.is_dir() and _done(run):
            path = run / "tasks" / TASK / "prompts.jsonl"
            return [json.loads(line) for line in path.open()]
    raise SystemExit("the scripted control needs one finished main run (for the prompts)")


def _beta_rate(i: int) -> float:
    return float(np.random.default_rng([26, i]).beta(0.5, 2.0))


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(m["content"] for m in prompt)


def pooled_rates(root: Path) -> dict[str, float]:
    """Pooled pass rate per problem over the finished ``main`` runs (for the control)."""
    c: dict[str, int] = {}
    n: dict[str, int] = {}
    for run in sorted((root / "main").glob("seed-*")):
        if not (run.is_dir() and _done(run)):
            continue
        fr = frames_from_run(run)[TASK]
        for pid, ci, ni in zip(fr.ids, fr.c.tolist(), fr.n.tolist()):
            c[pid] = c.get(pid, 0) + int(ci)
            n[pid] = n.get(pid, 0) + int(ni)
    return {pid: c[pid] / n[pid] for pid in c if n[pid] > 0}


def cmd_run(args: argparse.Namespace) -> int:
    seeds = parse_seeds(args.seeds)
    probs = pooled_rates(Path(args.out)) if args.variant == "scripted" else {}
    if args.variant == "scripted":
        print(f"scripted control: p_i from {len(probs)} pooled main-run problems", flush=True)
    jobs = 1 if args.variant == "scripted" else args.jobs
    t0 = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        for line in pool.map(lambda s: run_one(args, args.variant, s, probs), seeds):
            print(line, flush=True)
    print(f"{len(seeds)} runs in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


# --------------------------------------------------------------------- replay


def cmd_replay(args: argparse.Namespace) -> int:
    import httpx

    from rolleval._local._launcher import LOCAL_MODEL_NAME, LocalServer, LocalServerOptions

    run = Path(args.run) / "tasks" / TASK
    rolls = [json.loads(line) for line in (run / "rollouts.jsonl").open()]
    prompts = {}
    for line in (run / "prompts.jsonl").open():
        rec = json.loads(line)
        prompts[rec["problem_id"]] = rec["prompt"]
    sampling = json.loads((run / "task.json").read_text())["sampling"]
    pick = random.Random(args.replay_seed).sample(rolls, min(args.k, len(rolls)))
    module = "rolleval._local._serve" if args.variant == "main" else _server_module(args.variant)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(BENCH), os.environ.get("PYTHONPATH", "")])
    same = 0
    t0 = time.monotonic()
    with LocalServer(LocalServerOptions(server_module=module)) as srv:
        for r in pick:
            body = {
                "model": LOCAL_MODEL_NAME,
                "messages": prompts[r["problem_id"]],
                "temperature": sampling["temperature"],
                "top_p": sampling["top_p"],
                "max_tokens": sampling["max_tokens"],
                "stop": sampling["stop"],
                "seed": r["seed"],
            }
            got = httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=300).json()
            text = got["choices"][0]["message"]["content"]
            same += text == r["text"]
            if text != r["text"]:
                print(f"  differs: {r['problem_id']} #{r['index']}: {r['text']!r} -> {text!r}")
    idx = sorted(r["index"] for r in pick)
    print(
        f"replay {args.variant} of {args.run}: identical {same}/{len(pick)} rollouts "
        f"(shuffled, one at a time; indices 0: {idx.count(0)}, 1-7: {len(idx) - idx.count(0)}) "
        f"in {time.monotonic() - t0:.0f} s"
    )
    return 0


# ------------------------------------------------------------------- identity


def _texts_and_judgements(run: Path) -> tuple[dict[Any, str | None], dict[Any, bool]]:
    """The effective rollout text and judgement of every ``(problem id, index)`` of the run's
    task, read through the typed record model (a run stopped part way reads too); the
    judgements of completed rollouts only."""
    from rolleval.rundir._store import RunDir

    files = RunDir.open(run).require_task(TASK)
    texts = {k: r.text for k, r in files.read_rollouts().effective.items()}
    judgements = {
        k: bool(j.correct)
        for k, j in files.read_judgements().effective.items()
        if j.status == "ok"  # completed rollouts only (a run stopped part way has failures)
    }
    return texts, judgements


def cmd_identity(args: argparse.Namespace) -> int:
    """A variant's rollouts against ``main``'s of the same seed (finished or not): how many
    texts are identical, and whether the differing ones change correctness. Identical
    answers mean the variant cannot change any statistic of those runs."""
    root = Path(args.out)
    for run in sorted((root / args.variant).glob("seed-*")):
        main_run = root / "main" / run.name
        if not (run.is_dir() and run.name[5:].isdigit() and main_run.is_dir()):
            continue
        mt, mv = _texts_and_judgements(main_run)
        vt, vv = _texts_and_judgements(run)
        keys = [k for k in vv if k in mv]
        diff = [k for k in keys if mt.get(k) != vt.get(k)]
        print(
            f"{args.variant} {run.name} against main: {len(keys) - len(diff)} of {len(keys)} "
            f"graded rollouts identical; of the {len(diff)} that differ, correct "
            f"{sum(mv[k] for k in diff)} in main and {sum(vv[k] for k in diff)} in "
            f"{args.variant} (rollout indices {sorted({k[1] for k in diff})}); pass@1 over "
            f"them: main {sum(mv[k] for k in keys) / max(len(keys), 1):.3f}, {args.variant} "
            f"{sum(vv[k] for k in keys) / max(len(keys), 1):.3f}"
        )
    return 0


# -------------------------------------------------------------------- regroup


def _rollouts_of(run: Path) -> tuple[list[Any], dict[Any, int], dict[Any, str | None]]:
    """The run's rollouts in the order the server answered them (the file's order: the server
    is serial), their seeds and their texts, keyed by ``(problem id, index)``."""
    from rolleval.rundir._store import RunDir

    files = RunDir.open(run).require_task(TASK)
    order: list[Any] = []
    seeds: dict[Any, int] = {}
    for rec in files.read_rollouts().records:
        key = (rec.problem_id, rec.index)
        if key not in seeds:
            order.append(key)
        seeds[key] = int(rec.seed) if rec.seed is not None else -1
    texts, _ = _texts_and_judgements(run)
    return order, seeds, texts


async def _ask_in_order(
    base_url: str, order: list[Any], seeds: dict[Any, int], run: Path
) -> dict[Any, str | None]:
    """Each rollout of ``order`` asked with its seed through rolleval's own client, one at a
    time in that order (what a run at concurrency 1 or 2 sends the serial server)."""
    from rolleval._local._launcher import LOCAL_MODEL_NAME
    from rolleval.client import Client, EndpointConfig, SamplingParams
    from rolleval.rundir._store import RunDir

    files = RunDir.open(run).require_task(TASK)
    stored = files.read_settings().sampling
    assert stored is not None  # every run rolleval wrote records its sampling
    sampling = SamplingParams(
        temperature=stored.temperature,
        top_p=stored.top_p,
        max_tokens=stored.max_tokens,
        stop=tuple(stored.stop) if stored.stop else None,
    )
    prompts = {
        pid: rec.prompt if isinstance(rec.prompt, str) else [m.model_dump() for m in rec.prompt]
        for pid, rec in files.read_prompts().by_id.items()
        if rec.prompt is not None
    }
    config = EndpointConfig(base_urls=(base_url,), model=LOCAL_MODEL_NAME, concurrency=1)
    got: dict[Any, str | None] = {}
    async with Client(config) as client:
        for key in order:
            comp = await client.complete(prompts[key[0]], sampling, seed=seeds[key])
            got[key] = comp.text
    return got


def cmd_regroup(args: argparse.Namespace) -> int:
    """Does the grouping of seeds into runs reach the server? A *chimera* run: each problem
    asked with all the per-rollout seeds of one stored run drawn at random for that problem
    (``--regroup-seed``), in the stored runs' order, on a fresh server. If every answer equals
    the stored answer of its seed's own run, a rollout's outcome is a function of its prompt,
    index and seed only, in a run's context too: any regrouping of the stored rollouts is a
    run the server would have produced, and the permutation test's regroupings are real runs.
    ``--identity``: every problem from the first run (the harness check: must be all
    identical)."""
    import asyncio

    from rolleval._local._launcher import LocalServer, LocalServerOptions

    root = Path(args.out)
    seeds_list = parse_seeds(args.seeds)
    runs = [root / "main" / f"seed-{s}" for s in seeds_list]
    stored = {s: _rollouts_of(r) for s, r in zip(seeds_list, runs)}
    order = stored[seeds_list[0]][0]
    pids = list(dict.fromkeys(k[0] for k in order))
    pick = random.Random(args.regroup_seed)
    if args.identity:
        source = {k: seeds_list[0] for k in order}
    elif args.per_rollout:
        source = {k: pick.choice(seeds_list) for k in order}
    else:
        by_problem = {pid: pick.choice(seeds_list) for pid in pids}
        source = {k: by_problem[k[0]] for k in order}
    seeds = {k: stored[source[k]][1][k] for k in order}
    t0 = time.monotonic()
    with LocalServer(LocalServerOptions()) as srv:
        got = asyncio.run(_ask_in_order(srv.base_url, order, seeds, runs[0]))
    same = [k for k in order if got[k] == stored[source[k]][2].get(k)]
    differ = [k for k in order if k not in set(same)]
    unit = "rollout" if args.per_rollout else "problem"
    label = "identity" if args.identity else f"chimera by {unit} (seed {args.regroup_seed})"
    print(
        f"regroup {label} over seeds {args.seeds}: {len(same)}/{len(order)} rollouts identical "
        f"to their seed's own run (differing: index 0 {sum(k[1] == 0 for k in differ)}, "
        f"1-{args.rollouts - 1} {sum(k[1] != 0 for k in differ)}; "
        f"{len(set(source.values()))} source runs) in {time.monotonic() - t0:.0f} s"
    )
    for k in differ[:10]:
        print(
            f"  differs: {k[0]} #{k[1]} (from seed {source[k]}): "
            f"{stored[source[k]][2].get(k)!r} -> {got[k]!r}"
        )
    return 0 if len(same) == len(order) else 1


# -------------------------------------------------------------------- analyze


def load_variant(
    root: Path, variant: str, keep: set[int] | None = None
) -> tuple[list[int], list[Any]]:
    """The finished runs of a variant (only the seeds in ``keep``, if given), by seed."""
    seeds, frames = [], []
    for run in sorted((root / variant).glob("seed-*"), key=lambda p: int(p.name[5:].split(".")[0])):
        if not (run.is_dir() and run.name[5:].isdigit()):
            continue
        if (keep is None or int(run.name[5:]) in keep) and _done(run):
            seeds.append(int(run.name[5:]))
            frames.append(frames_from_run(run)[TASK])
    return seeds, frames


def verdict_matrix(frames: Sequence[Any], resamples: int) -> np.ndarray:
    """``V[baseline, candidate]`` = verdict code of run ``baseline`` against run
    ``candidate``: -1 regression, +1 improvement, 0 anything else (what ``rolleval compare``
    decides for one task)."""
    n_runs = len(frames)
    v = np.zeros((n_runs, n_runs), dtype=np.int8)
    for baseline, candidate in itertools.permutations(range(n_runs), 2):
        res = compare_frames(frames[baseline], frames[candidate], n_resamples=resamples, rng=0)
        word = res.comparison.verdict
        v[baseline, candidate] = -1 if word == "regression" else (1 if word == "improvement" else 0)
    return v


def pair_rates(v: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
    """Regression and improvement rates over ordered pairs of distinct original seeds."""
    baseline, candidate = np.meshgrid(idx, idx, indexing="ij")
    keep = baseline != candidate
    if not keep.any():
        return math.nan, math.nan
    vals = v[baseline[keep], candidate[keep]]
    return float(np.mean(vals == -1)), float(np.mean(vals == 1))


def permutation_pvalue(rates: np.ndarray, sims: int, seed: int = 0) -> float:
    """Seed labels permuted independently within each problem: p of Var(run means)."""
    rng = np.random.default_rng(seed)
    observed = np.var(rates.mean(axis=1), ddof=1)
    hits = 0
    for _ in range(sims):
        perm = rng.permuted(rates, axis=0)
        hits += np.var(perm.mean(axis=1), ddof=1) >= observed - 1e-15
    return (hits + 1) / (sims + 1)


def analyze_variant(
    variant: str, seeds: list[int], frames: list[Any], args: argparse.Namespace
) -> dict[str, Any]:
    c = np.array([f.c for f in frames])
    n = np.array([f.n for f in frames])
    noise = run_noise(c, n)
    out: dict[str, Any] = {"variant": variant, "seeds": seeds, "noise": noise.to_dict()}
    k = len(frames)
    rates = c / n
    out["permutation_pvalue"] = permutation_pvalue(rates, args.permutations)
    loo = (
        [run_noise(np.delete(c, i, 0), np.delete(n, i, 0)).ratio for i in range(k)]
        if k >= 3
        else []
    )
    out["leave_one_out_ratio"] = [min(loo), max(loo)] if loo else None
    t0 = time.monotonic()
    v = verdict_matrix(frames, args.resamples)
    reg, imp = pair_rates(v, np.arange(k))
    rng = np.random.default_rng(0)
    boot = np.array([pair_rates(v, rng.integers(0, k, k)) for _ in range(args.boot)])
    out["pairs"] = k * (k - 1)
    out["false_regression"] = reg
    out["false_improvement"] = imp
    # an SE from a bootstrap over seeds needs at least 3 seeds (N/A below)
    se = np.nanstd(boot, axis=0, ddof=1) if k >= 3 else np.array([math.nan, math.nan])
    out["se_regression"], out["se_improvement"] = (float(x) for x in se)
    lower = v[np.triu_indices(k, 1)]
    out["unordered"] = {
        "pairs": int(lower.size),
        "regression": int(np.sum(lower == -1)),
        "improvement": int(np.sum(lower == 1)),
        "other": int(np.sum(lower == 0)),
    }
    out["compare_seconds"] = round(time.monotonic() - t0, 1)
    if noise.ratio is not None:
        from scipy.stats import norm

        out["predicted_per_direction"] = float(norm.sf(norm.isf(ALPHA / 2) / np.sqrt(noise.ratio)))
    return out


def print_variant(r: dict[str, Any]) -> None:
    nz = r["noise"]
    seeds = r["seeds"]
    head = (
        f"{r['variant']}: {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}), {nz['n_problems']} problems"
    )
    print(head)
    if nz["ratio"] is None:
        print("  no informative problem (binomial variance 0)")
        return
    print(
        f"  pass@1 by seed: {', '.join(f'{m:.3f}' for m in nz['run_means'])}\n"
        f"  variance ratio (across seeds / binomial) {nz['ratio']:.2f}: chi2({nz['df']}) = "
        f"{nz['chi2']:.1f}, p = {nz['pvalue']:.3g}; permutation p = {r['permutation_pvalue']:.3g}"
    )
    if r["leave_one_out_ratio"]:
        lo, hi = r["leave_one_out_ratio"]
        print(f"  ratio with one seed left out: {lo:.2f} .. {hi:.2f}")
    print(
        f"  each problem's own variance / binomial {nz['problem_variance_ratio']:.2f}; share "
        f"of the variance between problems {nz['between_problem_share']:+.2f}; run-level "
        f"variance {nz['run_variance']:.2e} (upper 95% {nz['run_variance_upper']:.2e})"
    )
    u = r["unordered"]
    target = ALPHA / 2
    for word, key in (("regression", "false_regression"), ("improvement", "false_improvement")):
        rate = r[key]
        se = r["se_" + key.split("_")[1]]
        if math.isnan(se):
            print(
                f"  A/A false {word}: {rate:.3f} over {r['pairs']} ordered pairs (SE N/A: "
                "fewer than 3 seeds) [not checked]"
            )
            continue
        ok = "ok" if rate <= target + 2 * se else "ABOVE TARGET"
        print(
            f"  A/A false {word}: {rate:.3f} +- {se:.3f} over {r['pairs']} ordered pairs "
            f"(target <= {target} + 2 SE = {target + 2 * se:.3f}) [{ok}]"
        )
    pred = r.get("predicted_per_direction")
    print(
        f"  unordered pairs (lower seed as baseline): {u['regression']} regression, "
        f"{u['improvement']} improvement, {u['other']} other of {u['pairs']}"
        + (
            f"; an interval too narrow by sqrt(ratio) predicts {pred:.3f} per direction"
            if pred
            else ""
        )
    )


# ------------------------------------------------------------ sequential rows

THRESHOLD = 0.02


def _ordered_d(base: Any, cand: Any, order_seed: int) -> np.ndarray:
    """Per-problem ``d = candidate pass@1 - baseline pass@1`` in the order a sequential run
    with ``--seed order_seed`` visits BASE's problems (``rolleval._runner._sequential``:
    ``default_rng([seed, task position]).permutation``)."""
    rate_c = dict(zip(cand.ids, (cand.c / cand.n).tolist()))
    ids = [pid for pid in base.ids if pid in rate_c]
    rate_b = dict(zip(base.ids, (base.c / base.n).tolist()))
    order = [ids[i] for i in np.random.default_rng([order_seed, 0]).permutation(len(ids))]
    return np.array([rate_c[pid] - rate_b[pid] for pid in order])


def _seq_code(d: np.ndarray, every: int) -> tuple[int, int]:
    """(verdict code, problems used) of the sequential rule looked at every ``every``
    problems: -1 regression, +1 improvement, 0 otherwise."""
    from rolleval.compare._sequential import first_decision

    looks = np.unique(np.append(np.arange(every, d.size + 1, every), d.size))
    res = first_decision(d, alpha=ALPHA, threshold=THRESHOLD, looks=looks)
    code = -1 if res.verdict == "regression" else (1 if res.verdict == "improvement" else 0)
    return code, res.n_used


def sequential_aa(seeds: list[int], frames: list[Any], boot: int) -> dict[str, Any]:
    """A/A rows of the sequential design over all ordered seed pairs (candidate b's seed
    orders the visits), looked at every problem and every round of 10."""
    k = len(frames)
    out: dict[str, Any] = {"seeds": seeds, "pairs": k * (k - 1)}
    for every in (1, 10):
        v = np.zeros((k, k), dtype=np.int8)
        used = []
        for a, b in itertools.permutations(range(k), 2):
            v[a, b], u = _seq_code(_ordered_d(frames[a], frames[b], seeds[b]), every)
            used.append(u)
        reg, imp = pair_rates(v, np.arange(k))
        rng = np.random.default_rng(1)
        bs = np.array([pair_rates(v, rng.integers(0, k, k)) for _ in range(boot)])
        se = np.nanstd(bs, axis=0, ddof=1) if k >= 3 else np.array([math.nan, math.nan])
        out[f"every_{every}"] = {
            "false_regression": reg,
            "false_improvement": imp,
            "se_regression": float(se[0]),
            "se_improvement": float(se[1]),
            "mean_used": float(np.mean(used)),
        }
    return out


def sequential_power(
    base_seeds: list[int],
    base: list[Any],
    cand_seeds: list[int],
    cand: list[Any],
    resamples: int,
) -> dict[str, Any]:
    """Baseline ``main`` runs against ``rope`` candidates: the fixed design's verdict on all
    problems beside the sequential rule's, with the problems the latter used."""
    fixed, seq1, seq10, used1, used10 = [], [], [], [], []
    effects = []
    for fb, fc, sc in ((fb, fc, sc) for fb in base for fc, sc in zip(cand, cand_seeds)):
        res = compare_frames(fb, fc, n_resamples=resamples, rng=0)
        fixed.append(res.comparison.verdict == "regression")
        effects.append(float(res.comparison.effect))
        d = _ordered_d(fb, fc, sc)
        (c1, u1), (c10, u10) = _seq_code(d, 1), _seq_code(d, 10)
        seq1.append(c1 == -1)
        seq10.append(c10 == -1)
        used1.append(u1)
        used10.append(u10)
    n_problems = base[0].ids.size if hasattr(base[0].ids, "size") else len(base[0].ids)
    return {
        "pairs": len(fixed),
        "base_seeds": base_seeds,
        "cand_seeds": cand_seeds,
        "mean_effect": float(np.mean(effects)),
        "problems": n_problems,
        "fixed_regression": float(np.mean(fixed)),
        "seq_every_1_regression": float(np.mean(seq1)),
        "seq_every_1_used_mean": float(np.mean(used1)),
        "seq_every_1_used_p90": float(np.percentile(used1, 90)),
        "seq_every_10_regression": float(np.mean(seq10)),
        "seq_every_10_used_mean": float(np.mean(used10)),
        "seq_every_10_used_p90": float(np.percentile(used10, 90)),
    }


def print_sequential(aa: dict[str, Any], power: dict[str, Any] | None) -> None:
    target = ALPHA / 2
    print(
        f"sequential (betting CS, alpha {ALPHA}, threshold {THRESHOLD}), main A/A, {aa['pairs']} ordered pairs:"
    )
    for every in (1, 10):
        r = aa[f"every_{every}"]
        se = r["se_regression"]
        ok = (
            "not checked: SE N/A below 3 seeds"
            if math.isnan(se)
            else ("ok" if r["false_regression"] <= target + 2 * se else "ABOVE TARGET")
        )
        print(
            f"  looked at every {every} problem(s): false regression {r['false_regression']:.3f}"
            f" +- {r['se_regression']:.3f} (target <= {target} + 2 SE) [{ok}]; false improvement "
            f"{r['false_improvement']:.3f} +- {r['se_improvement']:.3f}; problems used mean "
            f"{r['mean_used']:.1f}"
        )
    if power is None:
        print("  power: N/A (no finished rope runs)")
        return
    p = power
    print(
        f"  power, main vs rope (rope_freq_scale 0.8), {p['pairs']} pairs, mean effect "
        f"{p['mean_effect']:+.4f} ({p['mean_effect'] / THRESHOLD:+.1f}x threshold):\n"
        f"    fixed design on all {p['problems']} problems: regression {p['fixed_regression']:.3f}\n"
        f"    sequential, every problem: regression {p['seq_every_1_regression']:.3f}, problems "
        f"used mean {p['seq_every_1_used_mean']:.1f}, p90 {p['seq_every_1_used_p90']:.0f}\n"
        f"    sequential, every 10: regression {p['seq_every_10_regression']:.3f}, problems "
        f"used mean {p['seq_every_10_used_mean']:.1f}, p90 {p['seq_every_10_used_p90']:.0f}"
    )


# ------------------------------------------------------------- replicate rows


def replicate_aa(frames: list[Any], k: int, draws: int, resamples: int) -> dict[str, Any]:
    """A/A with ``k`` replicate runs per side (``compare --baseline-replicate``): ``draws``
    random pairs of disjoint ``k``-seed groups, each compared by the replicate design."""
    from rolleval.compare._per_task import compare_replicate_frames

    rng = np.random.default_rng(26)
    codes = []
    for _ in range(draws):
        pick = rng.permutation(len(frames))[: 2 * k]
        res = compare_replicate_frames(
            [frames[i] for i in pick[:k]],
            [frames[i] for i in pick[k:]],
            n_resamples=resamples,
            rng=0,
        )
        word = res.comparison.verdict
        codes.append(-1 if word == "regression" else (1 if word == "improvement" else 0))
    c = np.array(codes)
    return {
        "k": k,
        "draws": draws,
        "false_regression": float(np.mean(c == -1)),
        "false_improvement": float(np.mean(c == 1)),
    }


def rollout_permutation_pvalue(root: Path, seeds: list[int], sims: int) -> float | None:
    """p of the observed variance of the run means when the rollouts (each with its outcome)
    are permuted between runs within their problem: valid because a rollout's outcome is a
    function of its prompt and seed (``identity``), whatever run it is placed in."""
    outcomes: list[dict[str, list[bool]]] = []
    for seed in seeds:
        _, judgements = _texts_and_judgements(root / "main" / f"seed-{seed}")
        by_problem: dict[str, list[bool]] = {}
        for (pid, _index), ok in sorted(judgements.items()):
            by_problem.setdefault(pid, []).append(ok)
        outcomes.append(by_problem)
    pids = sorted(set.intersection(*(set(o) for o in outcomes)))
    if len(seeds) < 3 or not pids:
        return None
    cube = np.array([[o[p] for p in pids] for o in outcomes], dtype=np.float64)  # R x P x n
    r, p, n = cube.shape
    observed = np.var(cube.mean(axis=(1, 2)), ddof=1)
    pooled = cube.transpose(1, 0, 2).reshape(p, r * n)
    rng = np.random.default_rng(26)
    hits = 0
    for _ in range(sims):
        shuffled = rng.permuted(pooled, axis=1).reshape(p, r, n)
        hits += np.var(shuffled.mean(axis=(0, 2)), ddof=1) >= observed - 1e-15
    return (hits + 1) / (sims + 1)


def run_effect_anova(root: Path, seeds: list[int]) -> dict[str, Any] | None:
    """One-way ANOVA of the per-(run, rollout index) means over problems: is there a run
    effect beyond the rollouts' own spread? Needs no binomial model (F(k-1, k(n-1)))."""
    from scipy.stats import f as f_dist

    rows = []
    for seed in seeds:
        _, judgements = _texts_and_judgements(root / "main" / f"seed-{seed}")
        cells: dict[int, list[bool]] = {}
        for (_pid, index), ok in judgements.items():
            cells.setdefault(index, []).append(ok)
        rows.append([np.mean(cells[j]) for j in sorted(cells)])
    m = np.array(rows)
    k, n = m.shape
    if k < 2 or n < 2:
        return None
    msb = n * np.sum((m.mean(1) - m.mean()) ** 2) / (k - 1)
    msw = np.sum((m - m.mean(1, keepdims=True)) ** 2) / (k * (n - 1))
    stat = float(msb / msw)
    return {"F": stat, "df": [k - 1, k * (n - 1)], "p": float(f_dist.sf(stat, k - 1, k * (n - 1)))}


def cmd_analyze(args: argparse.Namespace) -> int:
    root = Path(args.out)
    keep = set(parse_seeds(args.seeds)) if args.seeds else None
    results = []
    for variant in VARIANTS:
        seeds, frames = load_variant(root, variant, keep)
        if len(frames) < 2:
            print(f"{variant}: {len(frames)} finished runs, at least 2 needed (N/A)")
            continue
        r = analyze_variant(variant, seeds, frames, args)
        print_variant(r)
        results.append(r)
    seeds, frames = load_variant(root, "main", keep)
    if len(frames) >= 2:
        anova = run_effect_anova(root, seeds)
        if anova:
            print(
                f"main: run effect on the per-(run, rollout index) means: F = {anova['F']:.2f}, "
                f"df {anova['df']}, p = {anova['p']:.3g}"
            )
        reps = [
            replicate_aa(frames, k, args.draws, args.resamples)
            for k in (2, 4)
            if len(frames) >= 2 * k
        ]
        for r in reps:
            print(
                f"main: A/A with {r['k']} replicate runs per side ({r['draws']} draws of disjoint "
                f"seed groups): false regression {r['false_regression']:.3f}, false improvement "
                f"{r['false_improvement']:.3f}"
            )
        perm = rollout_permutation_pvalue(root, seeds, args.permutations)
        if perm is not None:
            print(
                "main: rollouts permuted between runs within their problem: p of the observed "
                f"variance of the run means = {perm:.3g}"
            )
        results.append(
            {"variant": "main-design", "anova": anova, "replicates": reps, "rollout_perm": perm}
        )
        aa = sequential_aa(seeds, frames, args.boot)
        rope_seeds, rope = load_variant(root, "rope", keep)
        power = sequential_power(seeds, frames, rope_seeds, rope, args.resamples) if rope else None
        print_sequential(aa, power)
        results.append({"variant": "sequential", "aa": aa, "power": power})
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/realmodel")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("-n", "--rollouts", type=int, default=8)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--variant", choices=VARIANTS, required=True)
    p.add_argument("--seeds", required=True)
    p.add_argument("--jobs", type=int, default=1, help="runs side by side (at most 2 servers)")
    p = sub.add_parser("replay")
    p.add_argument("--run", required=True)
    p.add_argument("--variant", choices=("main", "nocache", "llamacpp"), required=True)
    p.add_argument("--k", type=int, default=60)
    p.add_argument("--replay-seed", type=int, default=1)
    p = sub.add_parser("identity")
    p.add_argument("--variant", choices=("nocache", "llamacpp", "main-rerun"), required=True)
    p = sub.add_parser("regroup")
    p.add_argument("--seeds", required=True, help="stored main runs to draw from")
    p.add_argument("--regroup-seed", type=int, default=1)
    p.add_argument("--identity", action="store_true")
    p.add_argument("--per-rollout", action="store_true", help="draw each rollout's source run")
    p = sub.add_parser("analyze")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--boot", type=int, default=2000)
    p.add_argument("--permutations", type=int, default=5000)
    p.add_argument("--draws", type=int, default=400, help="replicate A/A draws")
    p.add_argument("--json")
    p.add_argument("--seeds", help="analyse only these seeds (e.g. 300-331); default: all")
    args = ap.parse_args(argv)
    if getattr(args, "jobs", 1) > 2:
        ap.error("--jobs: at most 2 model servers at once")
    commands = {
        "run": cmd_run,
        "replay": cmd_replay,
        "identity": cmd_identity,
        "regroup": cmd_regroup,
        "analyze": cmd_analyze,
    }
    return commands[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
