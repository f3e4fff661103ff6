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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._public import publish
from ._version import __version__
from .errors import (
    DataError,
    MissingDependencyError,
    RollevalError,
    RunError,
    SchemaVersionError,
    UsageError,
)

if TYPE_CHECKING:
    from ._importers import ImportResult, import_run
    from ._report._api import ReportResult, report_run
    from ._runner import RunOutcome, derive_seed, run_eval
    from ._runner._config import RunConfig, SamplingOverrides, build_config, load_config_file
    from ._runner._regrade import RegradeResult, regrade_run
    from .compare import compare_runs, gate_run, measure_run_noise, plan_runs, save_baseline
    from .rundir._show import show_records

#: Names imported on first use (PEP 562), so that ``import rolleval`` (and so every CLI
#: start, ``--help`` and ``--version`` included) does not load numpy, pydantic or httpx.
_LAZY = {
    "ImportResult": "._importers",
    "import_run": "._importers",
    "ReportResult": "._report._api",
    "report_run": "._report._api",
    "RunOutcome": "._runner",
    "derive_seed": "._runner",
    "run_eval": "._runner",
    "RunConfig": "._runner._config",
    "SamplingOverrides": "._runner._config",
    "build_config": "._runner._config",
    "load_config_file": "._runner._config",
    "RegradeResult": "._runner._regrade",
    "regrade_run": "._runner._regrade",
    "compare_runs": ".compare",
    "gate_run": ".compare",
    "measure_run_noise": ".compare",
    "plan_runs": ".compare",
    "save_baseline": ".compare",
    "show_records": ".rundir._show",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rolleval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    publish(__name__, {name: value}, [name])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DataError",
    "ImportResult",
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

publish(__name__, globals(), [n for n in __all__ if n not in _LAZY])
