"""Inspect AI task: CopyColors as a one-word short answer, read from the local copycolors.jsonl.

inspect eval tests/data/imports/make/inspect_task.py --epochs 4 ...   (see ../README.md)
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import match
from inspect_ai.solver import generate, prompt_template

HERE = Path(__file__).parent
TEMPLATE = (
    "Answer with one word.\n"
    "Q: Gravel is grey. What color is gravel?\nA: grey\n"
    "Q: A blueberry is blue. What color is a blueberry?\nA: blue\n"
    "Q: Cardboard is brown. What color is cardboard?\nA: brown\n"
    "Q: {prompt}\nA:"
)


@task
def copycolors():
    return Task(
        dataset=json_dataset(
            str(HERE / "copycolors.jsonl"),
            FieldSpec(input="question", target="answer", id="id"),
        ),
        solver=[prompt_template(TEMPLATE), generate()],
        # the chat model often answers "A: yellow": the colour is the last word
        scorer=match(location="end", ignore_case=True),
        config=GenerateConfig(temperature=0.7, max_tokens=16, stop_seqs=["\n"]),
    )
