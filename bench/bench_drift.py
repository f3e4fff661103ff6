"""Drift on the embedded model: default-threshold calibration, top-K error, throughput.

The baseline is the shipped Q4_1 SmolLM2-135M; candidates are made with llama.cpp's own
quantizer (``llama_cpp.llama_model_quantize``, ``allow_requantize``): a byte copy (an
identical re-serve), Q8_0 (a near-lossless requantization) and Q4_0 (a one-step 4-bit
requantization). Each side is served by rolleval's server (``rolleval._local._serve``, 2
threads); at most two servers run at once. Texts: the first ``--texts`` ARC-Easy problems
(prompt and reference answer, as ``rolleval drift --task arc_easy``), or by default
the 12 short texts of ``bench/drift_texts.jsonl`` (a full-vocabulary echo costs about 4 s
of CPU per 130 tokens on this model: the output layer runs for every position).

Prints, per candidate, the exact figures (full vocabulary on both sides); for Q4_0 the
top-K figures (ids, K = 20, 100, 200) as a fraction of the exact mean KLD; and the
throughput of :func:`rolleval.drift.measure_drift` (tokens scored per second, probe
excluded) against a bare ``httpx.AsyncClient`` loop posting the same echo bodies to the same
two servers with the same concurrency and parsing each JSON body (target >= 0.8x).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import shutil
import tempfile
import time
from typing import Any

import httpx
import orjson


def _quantize(src: str, dst: str, ftype: str) -> float:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.allow_requantize = True
    params.nthread = 1
    t = time.perf_counter()
    if llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params)) != 0:
        raise SystemExit(f"quantizing to {ftype} failed")
    return time.perf_counter() - t


async def _bare(urls: tuple[str, str], texts: list[tuple[str, str]], k: int, conc: int) -> int:
    """The same echo requests (full-vocabulary opt-in) to both servers; tokens scored."""
    gate = asyncio.Semaphore(conc)
    async with httpx.AsyncClient(timeout=600) as http:

        async def post(url: str, text: str) -> Any:
            body = {
                "rolleval": {"full_logprobs": True},
                "model": "m",
                "prompt": text,
                "max_tokens": 1,
                "temperature": 0.0,
                "echo": True,
                "logprobs": k,
            }
            r = await http.post(url + "/completions", content=orjson.dumps(body))
            return orjson.loads(r.content)

        async def pair(text: str) -> int:
            async with gate:
                b, _ = await asyncio.gather(post(urls[0], text), post(urls[1], text))
                return int(b["usage"]["prompt_tokens"]) - 1

        return sum(await asyncio.gather(*(pair(t) for _, t in texts)))


def _throughput(args: Any, b_srv: Any, c_srv: Any, b_side: Any, c_side: Any, texts: Any) -> None:
    from rolleval.drift import DriftOptions, measure_drift

    ratios = []
    for r in range(args.rounds):
        t = time.perf_counter()
        res = measure_drift(b_side, c_side, texts, DriftOptions(probe=False))
        ours = res.n_tokens / (time.perf_counter() - t)
        t = time.perf_counter()
        n = asyncio.run(_bare((b_srv.base_url, c_srv.base_url), texts, 20, 2))
        bare = n / (time.perf_counter() - t)
        ratios.append(ours / bare)
        print(
            f"round {r}: rolleval drift {ours:.1f} tokens/s vs bare httpx loop "
            f"{bare:.1f} tokens/s -> {ours / bare:.2f}x"
        )
    ratios.sort()
    print(
        f"bench_drift: rolleval vs bare httpx loop -> median "
        f"{ratios[len(ratios) // 2]:.2f}x (target >= 0.8x); load average "
        f"{os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=12, help="how many texts")
    ap.add_argument(
        "--corpus",
        default=os.path.join(os.path.dirname(__file__), "drift_texts.jsonl"),
        help="JSONL texts, or 'arc_easy' for the task's prompts and references",
    )
    ap.add_argument("--candidates", default="Q4_0,Q8_0,copy")
    ap.add_argument("--rounds", type=int, default=2, help="throughput rounds (a b a b)")
    ap.add_argument("--throughput-only", action="store_true", help="only the Q4_0 throughput")
    args = ap.parse_args()

    from rolleval._local._launcher import LocalServer, LocalServerOptions, default_model_path
    from rolleval.drift import DriftOptions, DriftSide, load_texts, measure_drift, task_texts

    base = str(default_model_path())
    if args.corpus == "arc_easy":
        texts = task_texts("arc_easy", limit=args.texts)
    else:
        texts = load_texts(args.corpus, limit=args.texts)
    tmp = tempfile.mkdtemp(prefix="rolleval-drift-")
    opts = {"n_threads": 2}
    print(f"load average {os.getloadavg()[0]:.1f}; {len(texts)} texts from {args.corpus}")
    try:
        with LocalServer(LocalServerOptions(model_path=base, server_options=opts)) as b_srv:
            for name in args.candidates.split(","):
                path = os.path.join(tmp, f"{name}.gguf")
                if name == "copy":
                    shutil.copyfile(base, path)
                else:
                    print(f"quantized Q4_1 -> {name} in {_quantize(base, path, name):.1f}s")
                with LocalServer(LocalServerOptions(model_path=path, server_options=opts)) as c_srv:
                    b_side = DriftSide(b_srv.base_url, "m", full_logprobs=True)
                    c_side = DriftSide(c_srv.base_url, "m", full_logprobs=True)
                    if args.throughput_only:
                        _throughput(args, b_srv, c_srv, b_side, c_side, texts)
                        continue
                    exact = measure_drift(b_side, c_side, texts, DriftOptions())
                    tl = exact.token_level
                    print(
                        f"{name}: exact mean KLD {exact.mean_kld.value:.5f} "
                        f"[{exact.mean_kld.low:.5f}, {exact.mean_kld.high:.5f}] over texts, "
                        f"{tl.mean_kld:.5f} over {tl.n_tokens} tokens; p99 "
                        f"{tl.kld_percentiles['p99']:.4f}; top-1 agreement "
                        f"{tl.n_top1_agree}/{tl.n_tokens} = {tl.top1_agreement:.4f}; delta NLL "
                        f"{exact.delta_nll.value:+.4f}; verdict {exact.verdict} at 0.01"
                    )
                    if name != "Q4_0":
                        continue
                    for k in (20, 100, 200):
                        top = measure_drift(
                            DriftSide(b_srv.base_url, "m", token_ids=True),
                            DriftSide(c_srv.base_url, "m", token_ids=True),
                            texts,
                            DriftOptions(top_logprobs=k, probe=False),
                        )
                        ratio = top.token_level.mean_kld / tl.mean_kld
                        print(
                            f"{name}: top-{k} (ids, capped tail) mean KLD "
                            f"{top.token_level.mean_kld:.5f} = {ratio:.3f} of exact "
                            f"({100 * (1 - ratio):.1f}% low); top-1 agreement "
                            f"{top.token_level.top1_agreement:.4f}"
                        )
                    _throughput(args, b_srv, c_srv, b_side, c_side, texts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
