"""The record model: one typed, versioned pydantic model per stream and per run file.

Everything rolleval writes into a run directory goes through these models (the runner,
``regrade``, :mod:`rolleval.testing._synthetic`, importers via :class:`rolleval.rundir.RunWriter`),
and the typed readers (:meth:`rolleval.rundir._store.TaskFiles.read_prompts` ...) read them back,
applying the effective-record rules once. ``docs/run-format.md`` documents the files;
``docs/architecture.md`` shows where each model sits on a rollout's path.

Streams (one JSON object per line):

* :class:`PromptRecord` (``prompts.jsonl``), :class:`RolloutRecord` (``rollouts.jsonl``),
  :class:`JudgementRecord` (``judgements.jsonl``).

Run files (one JSON document each):

* :class:`RunManifest`, :class:`TaskSettings`, :class:`Profile`, :class:`RunReport`,
  :class:`LockHolder`, and the baseline file :class:`BaselineFile`.
"""

from .._public import publish
from ._base import SCHEMA_VERSION, check_schema_version
from ._files import (
    BASELINE_FORMAT,
    BASELINE_SCHEMA,
    DEFAULT_THINKING,
    REPORT_VERSION,
    RUN_FORMAT,
    BaselineFile,
    BaselineTask,
    LockHolder,
    Profile,
    RunManifest,
    RunReport,
    RunStatus,
    RunSummary,
    SamplingSettings,
    Segment,
    SequentialDesign,
    SequentialLook,
    SequentialTask,
    TaskSettings,
)
from ._rules import (
    JudgementSet,
    PromptSet,
    RolloutSet,
    effective_judgements,
    effective_rollouts,
)
from ._streams import (
    GRADABLE_STATUS,
    ROLLOUT_STATUSES,
    JudgementRecord,
    Message,
    OptionScore,
    PromptRecord,
    RolloutRecord,
    RolloutStatus,
    Usage,
    canonical_json,
    content_hash,
    dump_record,
    make_judgement,
)

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_SCHEMA",
    "DEFAULT_THINKING",
    "GRADABLE_STATUS",
    "REPORT_VERSION",
    "ROLLOUT_STATUSES",
    "RUN_FORMAT",
    "SCHEMA_VERSION",
    "BaselineFile",
    "BaselineTask",
    "JudgementRecord",
    "JudgementSet",
    "LockHolder",
    "Message",
    "OptionScore",
    "Profile",
    "PromptRecord",
    "PromptSet",
    "RolloutRecord",
    "RolloutSet",
    "RolloutStatus",
    "RunManifest",
    "RunReport",
    "RunStatus",
    "RunSummary",
    "SamplingSettings",
    "Segment",
    "SequentialDesign",
    "SequentialLook",
    "SequentialTask",
    "TaskSettings",
    "Usage",
    "canonical_json",
    "check_schema_version",
    "content_hash",
    "dump_record",
    "effective_judgements",
    "effective_rollouts",
    "make_judgement",
]

publish(__name__, globals(), __all__)
