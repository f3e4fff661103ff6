"""rolleval: did this converted, quantized or re-served LLM get worse than its baseline?

The public surface is this module and the subpackages ``rolleval.metrics`` (exact
estimators), ``rolleval.stats`` (intervals, tests, power), ``rolleval.records`` (the record
model), ``rolleval.writer`` (the run writer importers use), ``rolleval.grading``,
``rolleval.tasks``, ``rolleval.client``, ``rolleval.compare``, ``rolleval.errors`` and
``rolleval.testing`` (a scriptable OpenAI-compatible test server). Everything else is private
and may change.

The commands of the CLI are thin layers over these functions: ``rolleval run`` is
:func:`run_eval`, ``report`` :func:`report_run`, ``regrade`` :func:`regrade_run`, ``show``
:func:`show_records`, ``compare`` :func:`compare_runs`, ``gate`` :func:`gate_run`,
``baseline save`` :func:`save_baseline` and ``plan`` :func:`plan_runs`.
"""

from ._public import publish
from ._version import __version__
from .api import RegradeResult, ReportResult, regrade_run, report_run, show_records
from .compare import compare_runs, gate_run, plan_runs, save_baseline
from .config import RunConfig, SamplingOverrides, build_config, load_config_file
from .errors import (
    DataError,
    MissingDependencyError,
    RollevalError,
    RunError,
    SchemaVersionError,
    UsageError,
)
from .runner import RunOutcome, derive_seed, run_eval

__all__ = [
    "DataError",
    "MissingDependencyError",
    "RegradeResult",
    "ReportResult",
    "RollevalError",
    "RunConfig",
    "RunError",
    "RunOutcome",
    "SamplingOverrides",
    "SchemaVersionError",
    "UsageError",
    "__version__",
    "build_config",
    "compare_runs",
    "derive_seed",
    "gate_run",
    "load_config_file",
    "plan_runs",
    "regrade_run",
    "report_run",
    "run_eval",
    "save_baseline",
    "show_records",
]

publish(__name__, globals(), __all__)
