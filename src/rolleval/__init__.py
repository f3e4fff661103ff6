"""rolleval: did this converted, quantized or re-served LLM get worse than its baseline?

The public surface is this module and the subpackages ``rolleval.metrics`` (exact
estimators), ``rolleval.stats`` (intervals, tests, power), ``rolleval.records`` (the record
model), ``rolleval.rundir`` (the run directory and the writer importers use; also
``rolleval.writer``), ``rolleval.grading``,
``rolleval.tasks``, ``rolleval.client``, ``rolleval.compare``, ``rolleval.errors`` and
``rolleval.testing`` (a scriptable OpenAI-compatible test server). Everything else is private
and may change.

The commands of the CLI are thin layers over these functions: ``rolleval run`` is
:func:`run_eval`, ``report`` :func:`report_run`, ``regrade`` :func:`regrade_run`, ``show``
:func:`show_records`, ``compare`` :func:`compare_runs`, ``gate`` :func:`gate_run`,
``baseline save`` :func:`save_baseline`, ``plan`` :func:`plan_runs` and ``noise``
:func:`measure_run_noise`.
"""

from ._importers import import_run
from ._public import publish
from ._report._api import ReportResult, report_run
from ._runner import RunOutcome, derive_seed, run_eval
from ._runner._config import RunConfig, SamplingOverrides, build_config, load_config_file
from ._runner._regrade import RegradeResult, regrade_run
from ._version import __version__
from .compare import compare_runs, gate_run, measure_run_noise, plan_runs, save_baseline
from .errors import (
    DataError,
    MissingDependencyError,
    RollevalError,
    RunError,
    SchemaVersionError,
    UsageError,
)
from .rundir._show import show_records

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
    "import_run",
    "load_config_file",
    "measure_run_noise",
    "plan_runs",
    "regrade_run",
    "report_run",
    "run_eval",
    "save_baseline",
    "show_records",
]

publish(__name__, globals(), __all__)
