"""rolleval: did this converted, quantized or re-served LLM get worse than its baseline?

The public surface is this module and the subpackages ``rolleval.metrics`` (exact
estimators), ``rolleval.stats`` (intervals, tests, power), ``rolleval.records`` (the record
model), ``rolleval.writer`` (the run writer importers use), ``rolleval.grading``,
``rolleval.tasks`` and ``rolleval.client``. Everything else
is private and may change.
"""

from ._version import __version__
from .api import RegradeResult, ReportResult, regrade_run, report_run, show_records
from .config import RunConfig, SamplingOverrides, build_config, load_config_file
from .errors import (
    DataError,
    MissingDependencyError,
    RollevalError,
    RunError,
    SchemaVersionError,
    UsageError,
)
from .importers import import_run
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
    "derive_seed",
    "import_run",
    "load_config_file",
    "regrade_run",
    "report_run",
    "run_eval",
    "show_records",
]
