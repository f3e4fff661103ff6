"""The error of each top-K tail treatment against the exact KL divergence, on the embedded model.

The baseline is the shipped Q4_1 SmolLM2-135M, the candidate its Q4_0 requantization
(``llama_cpp.llama_model_quantize``, ``allow_requantize``). Both models evaluate every text
in this process (llama-cpp-python, ``logits_all=True``): each position's full-vocabulary
log-softmax, hence the exact ``KL(P_baseline || P_candidate)``. Each side's top-K list is
then cut from its own row (its K most likely tokens, plus the actual token, as a server
lists them with ``logprobs: K`` and ``echo``), and every treatment is computed from the
lists alone:

* ``support, raw``: ``sum P log(P/Q)`` over the tokens listed on both sides (no tail);
* ``support, renormalised``: the KL divergence of the two sides restricted to the tokens
  listed on both, each renormalised to 1 (no tail);
* ``merged tail``: :func:`rolleval.drift.kl_merged_tail` (the shared tokens plus one tail
  bucket of mass ``1 - sum`` on each side; a lower bound);
* ``capped tail``: :func:`rolleval.drift.kl_capped_tail` (a token one side lists and the
  other does not kept apart, its unknown probability capped at the other side's K-th listed
  one; the smallest KL consistent with what is known; a lower bound);
* the same with one side full (a ``.gguf`` side rolleval serves against a top-K endpoint):
  ``baseline full`` and ``candidate full``, merged and capped;
* ``baseline top-K, candidate exact``: ``sum P log(P/Q)`` over the baseline's K most likely
  tokens with the candidate's exact values there (the "top-K support alone" of issue 22,
  which needs the candidate's whole distribution), raw and renormalised.

Printed per K (20, 100, 200): each treatment's mean KLD over all tokens, as a fraction of the
exact mean and percent low, and the largest amount by which a treatment exceeds the exact
value on any token (a lower bound never does, to float rounding). ``--corpus arc_easy``
takes the first ``--texts`` ARC-Easy problems (prompt and reference, as ``rolleval drift
--task arc_easy --continuation reference``). About 10 s for the 12 default texts (one CPU).

    python bench/bench_drift_tail.py [--texts 12] [--corpus bench/drift_texts.jsonl|arc_easy]
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import numpy as np

KS = (20, 100, 200)


def _quantize(src: str, dst: str) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
    params.allow_requantize = True
    params.nthread = 1
    if llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params)) != 0:
        raise SystemExit("quantizing to Q4_0 failed")


def _rows(llm: object, text: str) -> tuple[list[int], np.ndarray]:
    """Token ids and the float64 log-softmax rows predicting tokens 1..n-1."""
    from rolleval._local._serve import log_softmax

    ids = llm.tokenize(text.encode(), add_bos=True, special=True)  # type: ignore[attr-defined]
    llm.reset()  # type: ignore[attr-defined]
    llm.eval(ids)  # type: ignore[attr-defined]
    scores = llm.scores[: len(ids) - 1]  # type: ignore[attr-defined]
    return ids, np.array([log_softmax(r) for r in scores], dtype=np.float64)


def _top(row: np.ndarray, k: int, actual: int) -> tuple[list[int], float]:
    """A server's top-K list of one row (ids, the actual token added) and its floor as
    rolleval reads it (the smallest listed value, the actual token's left out)."""
    ids = np.argpartition(-row, k)[:k]
    listed = [int(i) for i in ids]
    floor = float(min(row[i] for i in listed if i != actual))
    if actual not in listed:
        listed.append(actual)
    return listed, floor


def _kl_raw(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(np.exp(p) * (p - q)))


def _kl_renorm(p: np.ndarray, q: np.ndarray) -> float:
    p = p - np.logaddexp.reduce(p)
    q = q - np.logaddexp.reduce(q)
    return _kl_raw(p, q)


def _treatments(b: np.ndarray, c: np.ndarray, k: int, actual: int) -> Iterator[tuple[str, float]]:
    """Every treatment's KL at one position (rows ``b``, ``c``; actual token ``actual``)."""
    from rolleval.drift import kl_capped_tail, kl_merged_tail

    b_list, b_floor = _top(b, k, actual)
    c_list, c_floor = _top(c, k, actual)
    c_set, b_set = set(c_list), set(b_list)
    shared = [t for t in b_list if t in c_set]
    a_only = [t for t in b_list if t not in c_set]
    c_only = [t for t in c_list if t not in b_set]
    p, q = b[shared], c[shared]
    yield "support, raw", _kl_raw(p, q)
    yield "support, renormalised", _kl_renorm(p, q)
    yield "merged tail", kl_merged_tail(p, q)
    yield (
        "capped tail",
        kl_capped_tail(
            p,
            q,
            baseline_only=b[a_only],
            candidate_floor=c_floor,
            candidate_only=c[c_only],
            baseline_floor=b_floor,
        ),
    )
    rest = np.ones(b.size, dtype=bool)
    rest[c_list] = False
    yield "baseline full, merged", kl_merged_tail(b[c_list], c[c_list])
    yield (
        "baseline full, capped",
        kl_capped_tail(b[c_list], c[c_list], baseline_only=b[rest], candidate_floor=c_floor),
    )
    rest = np.ones(b.size, dtype=bool)
    rest[b_list] = False
    yield "candidate full, merged", kl_merged_tail(b[b_list], c[b_list])
    yield (
        "candidate full, capped",
        kl_capped_tail(b[b_list], c[b_list], candidate_only=c[rest], baseline_floor=b_floor),
    )
    top_b = np.argpartition(-b, k)[:k]
    yield "baseline top-K, candidate exact, raw", _kl_raw(b[top_b], c[top_b])
    yield "baseline top-K, candidate exact, renormalised", _kl_renorm(b[top_b], c[top_b])


def _texts(args: argparse.Namespace) -> list[tuple[str, str]]:
    from rolleval.drift import load_texts, task_texts

    if args.corpus == "arc_easy":
        return task_texts("arc_easy", limit=args.texts)
    return load_texts(args.corpus, limit=args.texts)


def _measure(texts: list[tuple[str, str]], base: str, cand: str) -> tuple[float, dict, int]:
    import llama_cpp

    def load(path: str) -> Callable[[str], tuple[list[int], np.ndarray]]:
        llm = llama_cpp.Llama(
            model_path=path, n_ctx=2048, logits_all=True, verbose=False, n_threads=1
        )
        return lambda text: _rows(llm, text)

    b_eval, c_eval = load(base), load(cand)
    exact_sum, n = 0.0, 0
    sums: dict[tuple[int, str], float] = defaultdict(float)
    over: dict[tuple[int, str], float] = defaultdict(float)
    for _, text in texts:
        (b_ids, b_rows), (c_ids, c_rows) = b_eval(text), c_eval(text)
        if b_ids != c_ids:
            raise SystemExit("the two models tokenize a text differently")
        for i in range(len(b_rows)):
            b, c, actual = b_rows[i], c_rows[i], b_ids[i + 1]
            exact = float(np.sum(np.exp(b) * (b - c)))
            exact_sum += exact
            n += 1
            for k in KS:
                for name, value in _treatments(b, c, k, actual):
                    sums[(k, name)] += value
                    over[(k, name)] = max(over[(k, name)], value - exact)
    return exact_sum / n, {key: (v / n, over[key]) for key, v in sums.items()}, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=12, help="how many texts")
    ap.add_argument(
        "--corpus",
        default=os.path.join(os.path.dirname(__file__), "drift_texts.jsonl"),
        help="JSONL texts, or 'arc_easy' for the task's prompts and references",
    )
    args = ap.parse_args()
    from rolleval._local._launcher import default_model_path

    base = str(default_model_path())
    texts = _texts(args)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rolleval-tail-") as tmp:
        cand = os.path.join(tmp, "q4_0.gguf")
        _quantize(base, cand)
        exact, figures, n = _measure(texts, base, cand)
    print(
        f"bench_drift_tail: Q4_1 vs Q4_0, {len(texts)} texts from {args.corpus}, {n} tokens; "
        f"exact mean KLD {exact:.4f} nats; load average {os.getloadavg()[0]:.1f}"
    )
    names = [name for (k, name) in figures if k == KS[0]]
    for name in names:
        cells = []
        for k in KS:
            mean, worst = figures[(k, name)]
            cells.append(f"K={k}: {mean:.4f} ({100 * (1 - mean / exact):.1f}% low)")
        worst = max(figures[(k, name)][1] for k in KS)
        flag = "never above exact" if worst <= 1e-6 else f"above exact by up to {worst:.3g}"
        print(f"  {name:<46} " + "; ".join(cells) + f"; {flag}")
    print(f"bench_drift_tail: done in {time.perf_counter() - t0:.0f} s")
    assert math.isfinite(exact)


if __name__ == "__main__":
    main()
