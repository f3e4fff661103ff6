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
