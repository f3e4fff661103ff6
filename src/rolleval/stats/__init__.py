"""Suite-level inference over problems: intervals, paired tests, standard errors, power.

Pure functions (arrays in, frozen result dataclasses or floats out, no I/O).
The unit of analysis is always the problem: pass one score per problem (for
example its pass@1 over the rollouts), in the canonical order (sorted by
problem id).

=================================  ================================================
:func:`bootstrap_ci`               percentile bootstrap interval of the mean
:func:`grouped_bootstrap_ci`       the same in distribution, drawn over distinct values
:func:`grouped_bootstrap_columns`  several metrics sharing one set of resamples
:func:`cluster_bootstrap_ci`       percentile bootstrap resampling declared clusters
:func:`sign_flip_test`             paired sign-flip permutation test
:func:`cluster_sign_flip_test`     the same with one sign per declared cluster
:func:`min_attainable_pvalue`      smallest p-value the sign-flip test can reach
:func:`clt_se`                     CLT standard error of the mean
:func:`clustered_se`               cluster-robust (CR1) standard error
:func:`paired_se`                  standard error of a mean paired difference
:func:`variance_components`        between/within-problem variance of one run
:func:`paired_variance_components` components of a paired comparison
:func:`required_problems`          problems needed for a given power
:func:`minimum_detectable_effect`  smallest detectable difference at T problems
:func:`required_rollouts`          rollouts per problem needed at T problems
:func:`regression_power`           chance of the regression verdict at a true drop
:func:`run_noise`                  run-level variance from replicate runs (A/A)
:func:`run_level_adjustment`       an interval and p-value widened by run-level variance
:func:`betting_cs`                 anytime-valid confidence sequence of a bounded mean
:func:`betting_capital`            its betting capital processes at one null mean
=================================  ================================================

Every function checks all its arguments before any work and raises
:class:`rolleval.errors.UsageError` naming the parameter. Randomness comes
only from the keyword ``rng`` (None, an int seed or a numpy Generator).
"""

from __future__ import annotations

from .._public import publish
from ._bootstrap import BootstrapResult, bootstrap_ci
from ._cluster import cluster_bootstrap_ci, cluster_sign_flip_test
from ._confidence_sequence import (
    BettingCapital,
    ConfidenceSequence,
    betting_bets,
    betting_capital,
    betting_cs,
)
from ._grouped_bootstrap import (
    GroupedBootstrapResult,
    grouped_bootstrap_ci,
    grouped_bootstrap_columns,
)
from ._permutation import SignFlipResult, min_attainable_pvalue, sign_flip_test
from ._power import (
    minimum_detectable_effect,
    regression_power,
    required_problems,
    required_rollouts,
)
from ._run_noise import RunLevelAdjustment, RunNoise, run_level_adjustment, run_noise
from ._standard_error import (
    PairedVarianceComponents,
    VarianceComponents,
    clt_se,
    clustered_se,
    paired_se,
    paired_variance_components,
    variance_components,
)

__all__ = [
    "BettingCapital",
    "BootstrapResult",
    "ConfidenceSequence",
    "GroupedBootstrapResult",
    "PairedVarianceComponents",
    "RunLevelAdjustment",
    "RunNoise",
    "SignFlipResult",
    "VarianceComponents",
    "betting_bets",
    "betting_capital",
    "betting_cs",
    "bootstrap_ci",
    "clt_se",
    "cluster_bootstrap_ci",
    "cluster_sign_flip_test",
    "clustered_se",
    "grouped_bootstrap_ci",
    "grouped_bootstrap_columns",
    "min_attainable_pvalue",
    "minimum_detectable_effect",
    "paired_se",
    "paired_variance_components",
    "regression_power",
    "required_problems",
    "required_rollouts",
    "run_level_adjustment",
    "run_noise",
    "sign_flip_test",
    "variance_components",
]

publish(__name__, globals(), __all__)
