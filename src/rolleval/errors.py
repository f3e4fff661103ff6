"""The rolleval error tree.

::

    RollevalError                 base of every error rolleval raises on purpose
    ├── UsageError                the call is wrong (bad flag, bad parameter value)   exit 2
    ├── DataError                 an input file or record is wrong                   exit 2
    │   └── SchemaVersionError    a record/run schema version rolleval cannot read    exit 2
    ├── MissingDependencyError    an optional dependency is not installed            exit 2
    └── RunError                  a run could not produce a result (all rollouts
                                  failed, server unreachable, grader pool died)      exit 4

Exit codes of the whole tool (``rolleval._cli``):

====  ==========================================================
0     success (includes "improvement", "equivalent", "no change")
1     a negative result: regression established, gate blocked
2     usage or input error (this tree, minus RunError)
3     inconclusive, or not enough evidence for a verdict
4     the run itself failed (RunError)
5     internal error (a bug in rolleval; never a verdict)
130   interrupted (Ctrl-C); a run directory is left resumable
====  ==========================================================

Every message is one line that names the file (and record or line where
there is one) and says how to fix it.
"""

from __future__ import annotations

__all__ = [
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NEGATIVE",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "DataError",
    "MissingDependencyError",
    "RollevalError",
    "RunError",
    "SchemaVersionError",
    "UsageError",
]

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_RUN_FAILED = 4
EXIT_INTERNAL = 5
EXIT_INTERRUPTED = 130


class RollevalError(Exception):
    """Base class of every error rolleval raises on purpose."""

    exit_code = EXIT_USAGE


class UsageError(RollevalError, ValueError):
    """The call is wrong: a parameter, flag or option value is not accepted."""


class DataError(RollevalError):
    """An input file or record is malformed or inconsistent.

    ``path`` and ``line`` (1-based) locate the problem when known.
    """

    def __init__(self, message: str, *, path: object = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
            where += ": "
        super().__init__(where + message)


class SchemaVersionError(DataError):
    """A record or run directory carries a schema version this rolleval cannot read."""


class MissingDependencyError(RollevalError):
    """An optional dependency is needed and missing; the message gives the install command."""


class RunError(RollevalError):
    """A run could not produce a result (every rollout failed, the server is unreachable...)."""

    exit_code = EXIT_RUN_FAILED
