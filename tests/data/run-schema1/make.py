"""Made tests/data/run-schema1/run with rolleval at 003dbc3 (cwd: this folder)."""

import json
import re

from rolleval import build_config, run_eval
from rolleval.testing import Fault, OpenAIServer

rows = [
    {"id": f"s{i}", "question": f"What is {i}+{2 * i}?", "answer": str(3 * i)} for i in range(3)
]
with open("sums.jsonl", "w") as fh:
    fh.write("".join(json.dumps(r) + "\n" for r in rows))


def responder(request):
    content = request["messages"][-1]["content"]
    a, b = map(int, re.search(r"What is (\d+)\+(\d+)\?", content).groups())
    ans = a + b if request["seed"] % 3 else a + b + 1
    return f"The answer is \\boxed{{{ans}}}.", "stop"


with OpenAIServer(
    responder=responder, faults=[None, Fault.http_status(400), None, None, Fault.http_status(400)]
) as srv:
    cfg = build_config(
        {
            "model": srv.model,
            "endpoints": [srv.base_url],
            "tasks": [
                {
                    "name": "sums",
                    "path": "sums.jsonl",
                    "type": "math",
                    "id_field": "id",
                    "question_field": "question",
                    "answer_field": "answer",
                }
            ],
            "n": 2,
            "seed": 5,
            "concurrency": 1,
            "max_retries": 0,
            "timeout_s": 5,
            "grading_workers": 0,
        }
    )
    run_eval(cfg, "run", progress=False)
