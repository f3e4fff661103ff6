"""lighteval custom task: CopyColors as a one-word short answer, from the local folder
lighteval_data/ (test.jsonl, written from copycolors.jsonl), scored by lighteval's exact match.

    lighteval endpoint litellm ... "custom|copycolors|0" --custom-tasks lighteval_task.py   (see ../README.md)
"""

from pathlib import Path

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

HERE = Path(__file__).parent
FEWSHOT = (
    "Answer with one word.\n"
    "Q: Gravel is grey. What color is gravel?\nA: grey\n"
    "Q: A blueberry is blue. What color is a blueberry?\nA: blue\n"
    "Q: Cardboard is brown. What color is cardboard?\nA: brown\n"
)


def copycolors_prompt(line, task_name: str | None = None):
    return Doc(
        task_name=task_name,
        query=f"{FEWSHOT}Q: {line['question']}\nA:",
        choices=[line["answer"]],
        gold_index=0,
        id=line["id"],
    )


copycolors = LightevalTaskConfig(
    name="copycolors",
    prompt_function=copycolors_prompt,
    hf_repo=str(HERE / "lighteval_data"),
    hf_subset="default",
    hf_avail_splits=["test"],
    evaluation_splits=["test"],
    few_shots_split=None,
    few_shots_select=None,
    generation_size=16,
    metrics=[Metrics.exact_match],
    stop_sequence=["\n"],
    version=0,
)

TASKS_TABLE = [copycolors]
