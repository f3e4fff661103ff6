"""Metric key names: one vocabulary for reports, records and ``compare --metric``.

===================== ============================ ===========================
family                key                          params
===================== ============================ ===========================
``pass_at_k``         ``pass@{k}``                 ``{"k": k}``
``pass_hat_k``        ``pass^{k}``                 ``{"k": k}``
``g_pass_at_k``       ``G-Pass@{k}_{tau:g}``       ``{"k": k, "tau": tau}``
``mg_pass_at_k``      ``mG-Pass@{k}``              ``{"k": k}``
``window_pass_hat_k`` ``consecutive-pass^{k}``     ``{"k": k}``
``maj_at_n``          ``maj@n``                    ``{}``
``self_consistency``  ``self_consistency``         ``{}``
===================== ============================ ===========================

``pass@1`` is the mean accuracy c/n (avg@n). ``self-consistency`` is read as
``self_consistency``. ``tau`` is written with ``format(tau, "g")``:
``G-Pass@4_0``, ``G-Pass@4_0.25``, ``G-Pass@4_1``.
"""

from __future__ import annotations

import math
import re

from ..errors import UsageError
from ._validate import _as_int, _as_tau

__all__ = ["METRIC_FAMILIES", "metric_name", "parse_metric_name"]

#: Families in the order reports list them.
METRIC_FAMILIES: tuple[str, ...] = (
    "pass_at_k",
    "pass_hat_k",
    "g_pass_at_k",
    "mg_pass_at_k",
    "window_pass_hat_k",
    "maj_at_n",
    "self_consistency",
)

_VALID_FORMS = (
    "pass@K, pass^K, G-Pass@K_TAU (e.g. G-Pass@4_0.5), mG-Pass@K, consecutive-pass^K, "
    "maj@n, self_consistency (K an integer >= 1, TAU a number in [0, 1])"
)

_K = r"([0-9]+)"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pass_at_k", re.compile(rf"pass@{_K}", re.IGNORECASE)),
    ("pass_hat_k", re.compile(rf"pass\^{_K}", re.IGNORECASE)),
    ("g_pass_at_k", re.compile(rf"g-pass@{_K}_(.+)", re.IGNORECASE)),
    ("mg_pass_at_k", re.compile(rf"mg-pass@{_K}", re.IGNORECASE)),
    ("window_pass_hat_k", re.compile(rf"consecutive-pass\^{_K}", re.IGNORECASE)),
    ("maj_at_n", re.compile(r"maj@n", re.IGNORECASE)),
    ("self_consistency", re.compile(r"self[-_]consistency", re.IGNORECASE)),
)


def metric_name(family: str, *, k: int | None = None, tau: float | None = None) -> str:
    """The key of a metric, e.g. ``metric_name("g_pass_at_k", k=4, tau=0.5)``.

    Parameters
    ----------
    family : str
        One of :data:`METRIC_FAMILIES`.
    k : int, optional
        Number of draws (``k >= 1``); required by every family except ``maj_at_n`` and
        ``self_consistency``, which take no parameter.
    tau : float, optional
        Threshold fraction in [0, 1]; required by ``g_pass_at_k`` only.

    Returns
    -------
    str
        The canonical key; :func:`parse_metric_name` inverts it.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) on an unknown family or missing, superfluous
        or invalid parameters.

    Examples
    --------
    >>> from rolleval.metrics import metric_name
    >>> metric_name("pass_hat_k", k=8), metric_name("g_pass_at_k", k=4, tau=0.0)
    ('pass^8', 'G-Pass@4_0')
    """
    if family not in METRIC_FAMILIES:
        raise UsageError(f"family must be one of {', '.join(METRIC_FAMILIES)}; got {family!r}")
    if family in ("maj_at_n", "self_consistency"):
        if k is not None or tau is not None:
            raise UsageError(f"{family} takes no k or tau")
        return "maj@n" if family == "maj_at_n" else "self_consistency"
    if k is None:
        raise UsageError(f"{family} needs k, an integer >= 1")
    k_ = _as_int(k, "k", minimum=1)
    if family == "g_pass_at_k":
        if tau is None:
            raise UsageError("g_pass_at_k needs tau, a number in [0, 1]")
        _as_tau(tau)
        return f"G-Pass@{k_}_{format(float(tau), 'g')}"
    if tau is not None:
        raise UsageError(f"{family} takes no tau (only g_pass_at_k does)")
    template = {
        "pass_at_k": "pass@{}",
        "pass_hat_k": "pass^{}",
        "mg_pass_at_k": "mG-Pass@{}",
        "window_pass_hat_k": "consecutive-pass^{}",
    }
    return template[family].format(k_)


def parse_metric_name(name: str) -> tuple[str, dict[str, int | float]]:
    """Split a metric key into its family and parameters.

    Parameters
    ----------
    name : str
        A key such as ``pass@4``, ``pass^8``, ``G-Pass@16_0.75``, ``mG-Pass@8``,
        ``consecutive-pass^4``, ``maj@n`` or ``self_consistency`` (``self-consistency`` is
        accepted too). Matching ignores case and surrounding whitespace.

    Returns
    -------
    family : str
        One of :data:`METRIC_FAMILIES`.
    params : dict
        ``{"k": int}`` for pass@k, pass^k, mG-Pass@k and consecutive pass^k,
        ``{"k": int, "tau": float}`` for
        G-Pass@k, ``{}`` for maj@n and self-consistency.

    Raises
    ------
    ValueError
        (:class:`rolleval.errors.UsageError`) on an unknown name, ``k < 1`` or ``tau``
        outside [0, 1]; the message lists the valid forms.

    Examples
    --------
    >>> from rolleval.metrics import parse_metric_name
    >>> parse_metric_name("G-Pass@4_0.5")
    ('g_pass_at_k', {'k': 4, 'tau': 0.5})
    >>> parse_metric_name("pass^8")
    ('pass_hat_k', {'k': 8})
    """
    if not isinstance(name, str):
        raise UsageError(f"metric name must be a string of the form {_VALID_FORMS}; got {name!r}")
    text = name.strip()
    for family, pattern in _PATTERNS:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        if family in ("maj_at_n", "self_consistency"):
            return family, {}
        k = int(match.group(1))
        if k < 1:
            raise UsageError(
                f"metric {name!r}: k must be an integer >= 1; valid forms: {_VALID_FORMS}"
            )
        if family != "g_pass_at_k":
            return family, {"k": k}
        try:
            tau = float(match.group(2))
        except ValueError:
            tau = math.nan
        if not 0.0 <= tau <= 1.0:
            raise UsageError(
                f"metric {name!r}: tau must be a number in [0, 1]; valid forms: {_VALID_FORMS}"
            )
        return family, {"k": k, "tau": tau}
    raise UsageError(f"unknown metric {name!r}; valid forms: {_VALID_FORMS}")
