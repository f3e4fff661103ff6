"""Peer driver (runs in the peer venv): lm-evaluation-harness's ``local-chat-completions`` model.

    python bench/peers/lm_eval_generate.py REQUESTS.json --base-url URL --model NAME \\
        --concurrency 4 [--out TEXTS.json]

REQUESTS.json: ``{"sampling": {"temperature", "top_p", "max_tokens", "stop"}, "rollouts": n,
"problems": [{"problem_id", "messages"}]}``. Builds the requests the way lm-eval's evaluator
hands them to a chat API model (one ``generate_until`` Instance per repeat, the context a
``JsonChatStr`` of the messages, as ``--apply_chat_template`` makes it), constructs
``LocalChatCompletion`` (the class behind ``--model local-chat-completions``) with
``base_url`` = the full ``/v1/chat/completions`` URL, ``num_concurrent``, no tokenizer
(``tokenized_requests=False``), and times construction + ``generate_until``. lm-eval's own
request behaviour is kept (its aiohttp session, its retries, one fixed ``seed`` for every
request). Prints one JSON line: seconds, request count, output statistics.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", help="JSON file of problems, rollouts and sampling")
    parser.add_argument("--base-url", required=True, help="http://HOST:PORT/v1/chat/completions")
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", help="write the generated texts here (JSON list)")
    args = parser.parse_args()

    from importlib.metadata import version

    from lm_eval.api.instance import Instance
    from lm_eval.models.api_models import JsonChatStr
    from lm_eval.models.openai_completions import LocalChatCompletion

    with open(args.requests, encoding="utf-8") as fh:
        spec = json.load(fh)
    sampling, n = spec["sampling"], int(spec["rollouts"])
    gen_kwargs = {
        "until": list(sampling["stop"]),
        "max_gen_toks": int(sampling["max_tokens"]),
        "temperature": sampling["temperature"],
        "do_sample": True,
    }
    if sampling.get("top_p") is not None:
        gen_kwargs["top_p"] = sampling["top_p"]
    instances = []
    for doc_id, problem in enumerate(spec["problems"]):
        context = JsonChatStr(json.dumps(problem["messages"], ensure_ascii=False))
        for r in range(n):
            instances.append(
                Instance(
                    request_type="generate_until",
                    doc={"problem_id": problem["problem_id"]},
                    arguments=(context, dict(gen_kwargs)),
                    idx=r,
                    metadata=("bench", doc_id, n),
                )
            )

    # lm-eval logs and draws progress bars; stdout carries only the result line
    with contextlib.redirect_stdout(sys.stderr):
        cpu = time.process_time()
        start = time.perf_counter()
        lm = LocalChatCompletion(
            model=args.model,
            base_url=args.base_url,
            num_concurrent=args.concurrency,
            tokenizer_backend=None,
            tokenized_requests=False,
            max_gen_toks=int(sampling["max_tokens"]),
        )
        texts = lm.generate_until(instances, disable_tqdm=True)
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu

    by_problem: dict[str, set[str]] = {}
    for inst, text in zip(instances, texts):
        by_problem.setdefault(inst.doc["problem_id"], set()).add(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(
                [{"problem_id": i.doc["problem_id"], "text": t} for i, t in zip(instances, texts)],
                fh,
            )
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "requests": len(instances),
                "responses": sum(t is not None for t in texts),
                "empty": sum(not (t or "").strip() for t in texts),
                "mean_chars": sum(len(t or "") for t in texts) / max(len(texts), 1),
                "distinct_per_problem": sum(len(s) for s in by_problem.values())
                / max(len(by_problem), 1),
                "lm_eval": version("lm-eval"),
            }
        )
    )


if __name__ == "__main__":
    main()
