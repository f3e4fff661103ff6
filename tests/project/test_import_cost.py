"""Starting the CLI must not import scipy: it costs about a second per command (measured in
bench/bench_compare.py's start-up line) and only rare paths need it (a Clopper-Pearson
bound on a near-degenerate comparison, multi-span DROP answers, clustered t quantiles).
A structural check, not a timing: it fails when a module-level scipy import comes back."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import sys
sys.argv = ["rolleval", "{command}", "--help"]
from rolleval._cli import main
try:
    main()
except SystemExit:
    pass
import rolleval.compare, rolleval.grading, rolleval._report._build  # the compare and grading paths
heavy = sorted(m for m in ("scipy", "scipy.stats", "scipy.optimize") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


@pytest.mark.parametrize("command", ["compare", "report", "gate"])
def test_cli_start_imports_no_scipy(command: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK.format(command=command)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().splitlines()[-1] == "HEAVY="


#: What starting the CLI may load: click and the standard library, and of rolleval only the
#: command declarations and what they print errors with. numpy, pydantic, httpx, yaml and
#: orjson (and every rolleval module that needs them) load when a command runs.
LIGHT_ROLLEVAL = {
    "rolleval",
    "rolleval._cli",
    "rolleval._public",
    "rolleval._report",
    "rolleval._report._formats",
    "rolleval._sanitize",
    "rolleval._version",
    "rolleval.errors",
}

START = """
import sys
from rolleval._cli import main
code = main({args!r})
print("\\nMODULES=" + ",".join(sorted(sys.modules)))
"""


def _modules_after(args: list[str]) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", START.format(args=args)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.rsplit("MODULES=", 1)[1].strip().split(","))


@pytest.mark.parametrize(
    "args", [["--help"], ["--version"], ["run", "--help"], ["compare", "--help"]]
)
def test_help_and_version_load_only_click_and_the_command_declarations(args: list[str]) -> None:
    """Issue 25 item 5: ``rolleval --version`` took 0.66 s on an idle machine because the
    CLI imported numpy, pydantic, httpx and every rolleval package first. A structural check
    of the import work (not a timing): nothing outside click, the standard library and the
    light modules above is loaded."""
    modules = _modules_after(args)
    ours = {m for m in modules if m.split(".")[0] == "rolleval"}
    assert {m for m in ours if not m.startswith("rolleval._cli.")} <= LIGHT_ROLLEVAL
    # __main__ is the check itself; _distutils_hack is setuptools' .pth hook, loaded by site
    third_party = {
        m.split(".")[0]
        for m in modules
        if m.split(".")[0] not in sys.stdlib_module_names | {"__main__", "_distutils_hack"}
    }
    assert third_party <= {"rolleval", "click"}, sorted(third_party)


def test_the_import_formats_the_cli_declares_are_the_importers() -> None:
    from rolleval._cli._import import FORMATS as declared
    from rolleval._importers import FORMATS

    assert declared == FORMATS
