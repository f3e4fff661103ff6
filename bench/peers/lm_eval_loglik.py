"""Peer driver (runs in the peer venv): lm-evaluation-harness's ``local-completions`` model
on a log-likelihood multiple-choice subset.

    python bench/peers/lm_eval_loglik.py --gguf MODEL.gguf --data ROWS.jsonl \\
        --base-url http://HOST:PORT/v1/completions --model NAME --out DIR

ROWS.jsonl: one problem a line, ``id``, ``question``, ``choices`` (a list), ``answer``
(0-based index). Every row is evaluated (no ``--limit``: the file is the subset).

1. **Tokenizer.** ``local-completions`` needs a tokenizer for log-likelihood requests: it
   splits each ``(context, continuation)`` pair into tokens itself, and reads the
   continuation's log-probs from the echoed prompt as ``token_logprobs[ctxlen:-1]``, with
   ``ctxlen`` the context's token count *by its own tokenizer*. No Hugging Face tokenizer is
   reachable here, and transformers' own GGUF import needs torch, so the tokenizer is built
   from the GGUF file's vocabulary (``tokenizer.ggml.tokens``, ``.merges``, ``.token_type``,
   read with the ``gguf`` package): byte-level BPE with the ``smollm`` pre-tokenizer (single
   digits, then the GPT-2 split), control tokens as special tokens, no BOS added (the file's
   ``add_bos_token`` is false). Saved to ``DIR/tokenizer`` with ``save_pretrained``; lm-eval
   loads it through ``tokenizer=DIR/tokenizer``. Built only for ``tokenizer.ggml.model ==
   "gpt2"`` and ``pre == "smollm"``; anything else is refused.
2. **Task.** ``DIR/tasks/rolleval_loglik.yaml``: ``output_type: multiple_choice``, the rows
   as a local JSON dataset, ``doc_to_text: "Question: {{question}}\\nAnswer:"``,
   ``doc_to_choice: choices``, ``doc_to_target: answer``, the default target delimiter
   ``" "`` (so each continuation is ``" " + choice``, as lm-eval's ``arc_easy``), metrics
   ``acc`` and ``acc_norm``.
3. **Run.** The ``lm-eval run`` command line (printed and stored), ``--model
   local-completions`` with ``tokenizer_backend=huggingface``, ``tokenized_requests=False``
   (the prompt goes as text, as decoded by lm-eval from its own tokens) and ``--log_samples``.
4. **Summary.** ``DIR/summary.json``: the command, lm-eval's ``acc``/``acc_norm``, the
   samples file, and per document the context, continuations, lm-eval's per-option
   log-likelihoods and per-problem ``acc``/``acc_norm``, and the token ids lm-eval gave each
   pair (``_encode_pair`` of the same ``LocalCompletionsAPI`` object the run builds, and
   whether lm-eval's decode of them gives back the text it means to send).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

TASK = "rolleval_loglik"
TEMPLATE = "Question: {{question}}\\nAnswer:"


def build_tokenizer(gguf_path: str, out: Path) -> Path:
    """A Hugging Face fast tokenizer equal to the GGUF file's own (saved under ``out``)."""
    if (out / "tokenizer.json").exists():
        return out
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    fields = GGUFReader(gguf_path).fields

    def value(name: str):
        return fields[name].contents() if name in fields else None

    kind, pre = value("tokenizer.ggml.model"), value("tokenizer.ggml.pre")
    if (kind, pre) != ("gpt2", "smollm"):
        sys.exit(f"{gguf_path}: tokenizer {kind}/{pre}; this driver builds only gpt2/smollm")
    tokens = value("tokenizer.ggml.tokens")
    types = value("tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in value("tokenizer.ggml.merges")]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    control = [t for t, k in zip(tokens, types, strict=True) if k == 3]  # CONTROL
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])

    def special(key: str) -> str | None:
        i = value(f"tokenizer.ggml.{key}_token_id")
        return None if i is None else tokens[i]

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=special("bos"),
        eos_token=special("eos"),
        unk_token=special("unknown"),
        pad_token=special("padding"),
        clean_up_tokenization_spaces=False,
        add_bos_token=bool(value("tokenizer.ggml.add_bos_token")),
    )
    fast.save_pretrained(str(out))
    return out


def write_task(data: Path, out: Path) -> Path:
    folder = out / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{TASK}.yaml").write_text(
        f"task: {TASK}\n"
        "dataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {json.dumps(str(data.resolve()))}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        f'doc_to_text: "{TEMPLATE}"\n'
        "doc_to_choice: choices\n"
        "doc_to_target: answer\n"
        "metric_list:\n"
        "  - {metric: acc, aggregation: mean, higher_is_better: true}\n"
        "  - {metric: acc_norm, aggregation: mean, higher_is_better: true}\n"
        "metadata:\n  version: 1.0\n"
    )
    return folder


def model_args(base_url: str, model: str, tokenizer: Path) -> dict[str, str]:
    return {
        "base_url": base_url,
        "model": model,
        "tokenizer": str(tokenizer),
        "tokenizer_backend": "huggingface",
        "tokenized_requests": "False",
        "num_concurrent": "1",
        "max_retries": "3",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", required=True, help="the served model's GGUF file")
    parser.add_argument("--data", required=True, type=Path, help="rows, one problem a line")
    parser.add_argument("--base-url", required=True, help="http://HOST:PORT/v1/completions")
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(args.gguf, args.out / "tokenizer")
    tasks = write_task(args.data, args.out)
    results_dir = args.out / "lm_eval"
    margs = model_args(args.base_url, args.model, tokenizer)
    cmd = [
        str(Path(sys.executable).parent / "lm-eval"),
        "run",
        "--model",
        "local-completions",
        "--model_args",
        ",".join(f"{k}={v}" for k, v in margs.items()),
        "--include_path",
        str(tasks),
        "--tasks",
        TASK,
        "--num_fewshot",
        "0",
        "--batch_size",
        "1",
        "--output_path",
        str(results_dir),
        "--log_samples",
    ]
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    (args.out / "lm_eval.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"lm-eval exited {proc.returncode}; see {args.out / 'lm_eval.log'}")
    [results_file] = sorted(glob.glob(str(results_dir / "**" / "results_*.json"), recursive=True))[
        -1:
    ]
    [samples_file] = sorted(
        glob.glob(str(results_dir / "**" / f"samples_{TASK}_*.jsonl"), recursive=True)
    )[-1:]
    results = json.loads(Path(results_file).read_text())["results"][TASK]

    from importlib.metadata import version

    from lm_eval.models.openai_completions import LocalCompletionsAPI

    lm = LocalCompletionsAPI(**{**margs, "tokenized_requests": False, "num_concurrent": 1})
    docs = []
    for line in Path(samples_file).read_text().splitlines():
        s = json.loads(line)
        pairs = [(a["arg_0"], a["arg_1"]) for a in s["arguments"].values()]
        encoded = [lm._encode_pair(c, x) for c, x in pairs]
        docs.append(
            {
                "doc_id": s["doc_id"],
                "id": s["doc"]["id"],
                "target": s["target"],
                "acc": s["acc"],
                "acc_norm": s["acc_norm"],
                "contexts": [c for c, _ in pairs],
                "continuations": [x for _, x in pairs],
                "lls": [float(r[0]) for r in s["filtered_resps"]],
                "context_ids": [c for c, _ in encoded],
                "continuation_ids": [x for _, x in encoded],
                "decoded_as_sent": [
                    lm.decode_batch([c + x])[0] == ctx + cont
                    for (c, x), (ctx, cont) in zip(encoded, pairs, strict=True)
                ],
            }
        )
    docs.sort(key=lambda d: d["doc_id"])
    summary = {
        "lm_eval": version("lm-eval"),
        "command": cmd,
        "acc": results["acc,none"],
        "acc_norm": results["acc_norm,none"],
        "n": len(docs),
        "samples_file": samples_file,
        "results_file": results_file,
        "docs": docs,
    }
    (args.out / "summary.json").write_text(json.dumps(summary))
    print(
        json.dumps(
            {k: summary[k] for k in ("lm_eval", "acc", "acc_norm", "n", "samples_file")},
        )
    )


if __name__ == "__main__":
    main()
