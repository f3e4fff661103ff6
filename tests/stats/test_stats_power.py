"""Power planning (paired, two-sided) in rolleval.stats."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from rolleval.errors import UsageError
from rolleval.stats import minimum_detectable_effect, required_problems, required_rollouts

Z_975 = 1.959963984540054  # norm.ppf(0.975)
Z_80 = 0.8416212335729143  # norm.ppf(0.8)

DESIGN = {
    "omega2": 0.02,
    "sigma2_baseline": 0.15,
    "n_rollouts_baseline": 8,
    "sigma2_candidate": 0.18,
    "n_rollouts_candidate": 4,
}


def test_required_problems_formula():
    variance = 0.02 + 0.15 / 8 + 0.18 / 4
    expected = math.ceil((Z_975 + Z_80) ** 2 * variance / 0.03**2)
    assert required_problems(0.03, **DESIGN) == expected == 731


def test_minimum_detectable_effect_formula():
    variance = 0.02 + 0.15 / 8 + 0.18 / 4
    assert minimum_detectable_effect(400, **DESIGN) == pytest.approx(
        (Z_975 + Z_80) * math.sqrt(variance / 400), rel=1e-14
    )


def test_alpha_and_power_enter_as_z_quantiles():
    # alpha = 0.01 two-sided and power 0.9: z = 2.5758 + 1.2816.
    variance = 0.02 + 0.15 / 8 + 0.18 / 4
    expected = math.ceil((2.5758293035489 + 1.2815515655446) ** 2 * variance / 0.05**2)
    assert required_problems(0.05, **DESIGN, alpha=0.01, power=0.9) == expected


@pytest.mark.parametrize(
    "design", [DESIGN, {**DESIGN, "omega2": 0.0}, {**DESIGN, "n_rollouts_baseline": 1.5}]
)
def test_round_trip_problems_to_mde_and_back(design):
    for t in [1, 2, 3, 7, 50, 101, 999, 1000, 4096, 123_457]:
        mde = minimum_detectable_effect(t, **design)
        assert required_problems(mde, **design) == t
        # A slightly larger effect needs no more problems, a slightly smaller one more.
        assert required_problems(mde * (1 + 1e-6), **design) <= t
        assert required_problems(mde * (1 - 1e-6), **design) == t + 1


def test_required_problems_is_at_least_one():
    no_variance = {
        "omega2": 0.0,
        "sigma2_baseline": 0.0,
        "n_rollouts_baseline": 1,
        "sigma2_candidate": 0.0,
        "n_rollouts_candidate": 1,
    }
    assert required_problems(0.01, **no_variance) == 1
    assert required_problems(0.9, **DESIGN) == 1


def test_planned_design_reaches_the_power_in_simulation():
    # True rates: x_A ~ U(0.2, 0.8), x_B = x_A + 0.05 + e with e = +-0.1, so
    # omega2 = Var(x_A - x_B) = 0.01, sigma2_baseline = E[x_A(1-x_A)] = 0.22 and
    # sigma2_candidate = E[x_B(1-x_B)] = 0.55 - 0.3425 = 0.2075. K = 4 rollouts each.
    delta, k = 0.05, 4
    design = {
        "omega2": 0.01,
        "sigma2_baseline": 0.22,
        "n_rollouts_baseline": k,
        "sigma2_candidate": 0.2075,
        "n_rollouts_candidate": k,
    }
    t = required_problems(delta, **design)
    rng = np.random.default_rng(2024)
    experiments = 2000
    x_a = rng.uniform(0.2, 0.8, (experiments, t))
    x_b = x_a + delta + rng.choice([-0.1, 0.1], (experiments, t))
    d = (rng.binomial(k, x_b) - rng.binomial(k, x_a)) / k
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(t))
    power = np.mean(np.abs(z) > Z_975)
    # Monte Carlo sd 0.009; a one-sided z or a missing /K would be off by > 0.08.
    assert power == pytest.approx(0.8, abs=0.04)


# --------------------------------------------------------------- rollouts


@pytest.mark.parametrize(("delta", "t"), [(0.03, 600), (0.05, 300), (0.02, 5000), (0.1, 40)])
def test_required_rollouts_is_the_smallest_sufficient_k(delta, t):
    components = {"omega2": 0.02, "sigma2_baseline": 0.15, "sigma2_candidate": 0.18}
    k = required_rollouts(delta, t, **components)
    assert k is not None

    def mde(kk):
        return minimum_detectable_effect(
            t,
            omega2=0.02,
            sigma2_baseline=0.15,
            n_rollouts_baseline=kk,
            sigma2_candidate=0.18,
            n_rollouts_candidate=kk,
        )

    assert mde(k) <= delta * (1 + 1e-12)
    if k > 1:
        assert mde(k - 1) > delta


def test_required_rollouts_none_when_problem_variance_alone_is_too_big():
    components = {"omega2": 0.02, "sigma2_baseline": 0.15, "sigma2_candidate": 0.18}
    assert required_rollouts(0.03, 100, **components) is None
    # Even a million rollouts per problem would not do.
    huge = minimum_detectable_effect(
        100,
        omega2=0.02,
        sigma2_baseline=0.15,
        n_rollouts_baseline=1e6,
        sigma2_candidate=0.18,
        n_rollouts_candidate=1e6,
    )
    assert huge > 0.03


def test_required_rollouts_without_rollout_noise():
    assert required_rollouts(0.05, 100, omega2=0.0, sigma2_baseline=0.0, sigma2_candidate=0.0) == 1
    assert (
        required_rollouts(0.001, 10, omega2=0.1, sigma2_baseline=0.0, sigma2_candidate=0.0) is None
    )


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: required_problems(0.0, **DESIGN),
            "`delta` must be a finite number > 0; got 0.0 (float)",
        ),
        (
            lambda: required_problems(-0.02, **DESIGN),
            "`delta` must be a finite number > 0; got -0.02 (float)",
        ),
        (
            lambda: required_problems(0.02, **{**DESIGN, "omega2": -0.1}),
            "`omega2` must be a finite number >= 0; got -0.1 (float)",
        ),
        (
            lambda: required_problems(0.02, **{**DESIGN, "sigma2_candidate": float("nan")}),
            "`sigma2_candidate` must be a finite number >= 0; got nan (float)",
        ),
        (
            lambda: required_problems(0.02, **{**DESIGN, "n_rollouts_baseline": 0}),
            "`n_rollouts_baseline` must be a finite number > 0; got 0 (int)",
        ),
        (
            lambda: required_problems(0.02, **DESIGN, alpha=0.0),
            "`alpha` must be a number strictly between 0 and 1; got 0.0 (float)",
        ),
        (
            lambda: required_problems(0.02, **DESIGN, power=80),
            "`power` must be a number strictly between 0 and 1; got 80 (int)",
        ),
        (
            lambda: required_problems(0.02, **DESIGN, power=0.02),
            "`power` must be greater than `alpha`/2 = 0.025; got 0.02",
        ),
        (
            lambda: minimum_detectable_effect(0, **DESIGN),
            "`n_problems` must be an integer >= 1; got 0 (int)",
        ),
        (
            lambda: required_rollouts(
                0.02, 2.5, omega2=0.0, sigma2_baseline=0.1, sigma2_candidate=0.1
            ),
            "`n_problems` must be an integer >= 1; got 2.5 (float)",
        ),
        (
            lambda: required_rollouts(
                "0.02", 100, omega2=0.0, sigma2_baseline=0.1, sigma2_candidate=0.1
            ),
            "`delta` must be a finite number > 0; got '0.02' (str)",
        ),
    ],
    ids=[
        "delta-zero",
        "delta-negative",
        "omega2-negative",
        "sigma2_candidate-nan",
        "n_rollouts_baseline-zero",
        "alpha-zero",
        "power-percent",
        "power-below-half-alpha",
        "mde-n_problems",
        "rollouts-n_problems",
        "rollouts-delta-string",
    ],
)
def test_power_validation_messages(call, message):
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        call()


def test_design_parameters_are_keyword_only():
    with pytest.raises(TypeError):
        required_problems(0.02, 0.02, 0.15, 8, 0.18, 4)  # type: ignore[misc]
