"""Per-problem estimators and suite summaries of the sampled-answer metric family.

Pure functions, no I/O. The unit of analysis is the problem: each per-problem estimator
turns one problem's ``n`` judged rollouts (``c`` correct) into a value in [0, 1] or
"unavailable" (``None`` for scalars, ``NaN`` in arrays) when ``k > n``; a suite value is the
unweighted mean over eligible problems, reported with eligible and total counts
(:class:`MetricValue`). Definitions, conventions and sources: ``docs/contract.md``.

=========================== =========================================================
per problem (scalar)        :func:`pass_at_k`, :func:`pass_hat_k`, :func:`g_pass_at_k`,
                            :func:`mg_pass_at_k`, :func:`window_pass_hat_k`,
                            :func:`majority_vote`, :func:`majority_vote_at_k`
per suite (arrays)          :func:`pass_at_k_array`, :func:`pass_hat_k_array`,
                            :func:`g_pass_at_k_array`, :func:`mg_pass_at_k_array`,
                            :func:`majority_vote_array`,
                            :func:`majority_vote_at_k_array`
suite summaries             :func:`suite_metrics`, :func:`summarize`, :func:`default_ks`
metric keys                 :func:`metric_name`, :func:`parse_metric_name`
=========================== =========================================================
"""

from .._public import publish
from ._arrays import g_pass_at_k_array, mg_pass_at_k_array, pass_at_k_array, pass_hat_k_array
from ._exact import g_pass_at_k, mg_pass_at_k, pass_at_k, pass_hat_k
from ._names import METRIC_FAMILIES, metric_name, parse_metric_name
from ._suite import DEFAULT_TAUS, MetricValue, SuiteMetrics, default_ks, suite_metrics, summarize
from ._validate import g_pass_threshold
from ._vote import (
    MajorityVote,
    MajorityVoteArrays,
    VoteAtK,
    majority_vote,
    majority_vote_array,
    majority_vote_at_k,
    majority_vote_at_k_array,
)
from ._window import window_pass_hat_k

__all__ = [
    "DEFAULT_TAUS",
    "METRIC_FAMILIES",
    "MajorityVote",
    "MajorityVoteArrays",
    "MetricValue",
    "SuiteMetrics",
    "VoteAtK",
    "default_ks",
    "g_pass_at_k",
    "g_pass_at_k_array",
    "g_pass_threshold",
    "majority_vote",
    "majority_vote_array",
    "majority_vote_at_k",
    "majority_vote_at_k_array",
    "metric_name",
    "mg_pass_at_k",
    "mg_pass_at_k_array",
    "parse_metric_name",
    "pass_at_k",
    "pass_at_k_array",
    "pass_hat_k",
    "pass_hat_k_array",
    "suite_metrics",
    "summarize",
    "window_pass_hat_k",
]

publish(__name__, globals(), __all__)
