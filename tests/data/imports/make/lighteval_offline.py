"""Start the lighteval CLI on a machine without Hugging Face Hub access.

lighteval 0.13.0 imports every built-in task module when it builds its task registry, even
for a run of one custom task. The mt_bench module builds an LLM-judge metric at import time
whose constructor asks the Hub whether the judge model exists
(``HfApi.list_models(model_name=...)``): offline that raises, and with huggingface_hub 2.x
the keyword itself is a TypeError. This shim answers that one question with a placeholder
entry and then runs lighteval's own CLI unchanged; nothing that evaluates, scores or writes
details is touched (the mt_bench metric is never used by the custom task).

    python lighteval_offline.py endpoint litellm ...   (same arguments as `lighteval`)
"""

import sys

import huggingface_hub

huggingface_hub.HfApi.list_models = lambda self, *args, **kwargs: [None]

from lighteval.__main__ import app  # noqa: E402

sys.argv[0] = "lighteval"
app()
