"""Derive ``lm-eval/think/`` from the real ``lm-eval/degraded/`` log: the same results file
and sample lines, as lm-eval (0.4.9.1 and later) logs them when its model arguments name
``think_end_token=</think>`` (with ``enable_thinking=True``).

lm-eval strips each generation up to the last end token before it scores and logs it
(``lm_eval.models.utils.postprocess_generated_text``: ``generation.split(think_end_token)[-1]
.lstrip()``), so a closed thought is absent from ``resps``; a generation with no end token
(cut at the budget) is logged and scored whole. The first six documents get generations of
each kind below (``raw``: what the model wrote; ``resps``: lm-eval's stripped text;
``filtered_resps`` and ``exact_match``: lm-eval's last-word filter and metric on it).

    python tests/data/imports/make/make_think_fixture.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "lm-eval" / "degraded"
OUT = HERE.parent / "lm-eval" / "think"
END = "</think>"

#: Per document: the four raw generations (the model's text before lm-eval's strip).
RAW = [
    ["<think>\nA sunflower is yellow.\n</think>\n\nyellow"] * 4,  # closed, right
    ["<think>\nThe ocean is blue, so the answer is blue"] * 4,  # unclosed, thought says it
    ["<think>\nMaybe green.\n</think>\n\ngreen"] * 4,  # closed, wrong
    ["<think>\nlet me see</think>first<think>no</think>\n\n" + "{}"] * 4,  # two thoughts
    ["The answer might be purple"] * 4,  # no tag at all (template-opened, or none)
    ["<think>\nhmm\n</think>\n\n{}", "<think>\nstill thinking about {}"] * 2,  # mixed repeats
]


def _strip(text: str) -> str:
    """lm-eval's ``postprocess_generated_text`` with ``think_end_token`` and no stop."""
    return text.split(END)[-1].lstrip()


def _last_word(text: str) -> str:
    m = re.search(r"([A-Za-z]+)[^A-Za-z]*$", text)
    return m.group(1) if m else text


def main() -> None:
    OUT.mkdir(exist_ok=True)
    (results_src,) = SRC.glob("results_*.json")
    (samples_src,) = SRC.glob("samples_*.jsonl")
    results = json.loads(results_src.read_text())
    results["config"]["model_args"] = {
        **results["config"]["model_args"],
        "enable_thinking": True,
        "think_end_token": END,
    }
    lines = [json.loads(x) for x in samples_src.read_text().splitlines()[: len(RAW)]]
    for line, raw in zip(lines, RAW, strict=True):
        target = line["target"]
        texts = [_strip(r.format(target)) for r in raw]
        line["resps"] = [texts]
        first = _last_word(texts[0])
        line["filtered_resps"] = [first]
        line["exact_match"] = float(first.lower() == target.lower())
    results["n-samples"] = {
        k: {"original": len(RAW), "effective": len(RAW)} for k in results["n-samples"]
    }
    (OUT / results_src.name).write_text(json.dumps(results, indent=2) + "\n")
    (OUT / samples_src.name).write_text("".join(json.dumps(x) + "\n" for x in lines))


if __name__ == "__main__":
    main()
