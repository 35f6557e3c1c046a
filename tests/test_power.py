"""Power and minimum detectable effects against textbook values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ropebook import claims
from ropebook.stats import power


def test_one_sample_t_test_power_matches_published_sample_sizes():
    # Cohen (1988) / G*Power, one-sample two-sided t-test, α = 0.05, power 0.8:
    # d = 1 needs n = 10 (power 0.803), d = 0.5 needs n = 34 (power 0.808).
    assert power.seeds_needed(1.0, 1.0) == 10
    assert power.t_test_power(1.0, 10) == pytest.approx(0.803, abs=1e-3)
    assert power.seeds_needed(1.0, 0.5) == 34
    assert power.t_test_power(0.5, 34) == pytest.approx(0.808, abs=1e-3)


def test_min_detectable_effect_inverts_power_and_tends_to_the_normal_formula():
    for n in (3, 5, 10):
        mde = power.min_detectable_effect(2.0, n)
        assert power.t_test_power(mde / 2.0, n) == pytest.approx(0.8, abs=1e-6)
    z = 1.959964 + 0.841621  # z_{0.975} + z_{0.8}
    assert power.min_detectable_effect(1.0, 20_000) * math.sqrt(20_000) == pytest.approx(
        z, rel=1e-3
    )
    assert power.min_detectable_effect(1.0, 3) > power.min_detectable_effect(1.0, 5)
    assert power.min_detectable_effect(0.0, 3) == 0.0


def test_lehr_rule_for_unpaired_comparisons():
    # the "~16 (σ/δ)² seeds per arm": 2 (1.96 + 0.84)² = 15.7
    assert power.normal_seeds_per_arm(1.0, 1.0) == pytest.approx(15.70, abs=0.01)
    assert power.normal_seeds_per_arm(6.0, 1.0) == pytest.approx(565, abs=1)


def test_percent_and_bound_text():
    assert power.percent_of_perplexity(math.log(1.01)) == pytest.approx(1.0)
    assert power.percent_of_perplexity(0.0) == 0.0
    assert power.bound_text(-0.31, 0.82) == "|Δ| < 0.82 %"
    with pytest.raises(ValueError, match="at least 2 paired samples"):
        power.min_detectable_effect(1.0, 1)


def test_straddling_interval_cannot_decide():
    assert claims.verdict_from_interval(-0.1, 0.2, threshold=0.0) == "cannot decide"
    assert claims.verdict_from_interval(0.1, 0.2, threshold=0.0) == "held"
    assert claims.verdict_from_interval(-0.3, -0.2, threshold=0.0, above=True) == "not held"
    assert claims.interval_below(0.5)((0.4, 0.6)) == "cannot decide"
    assert "cannot decide" in claims.VERDICTS and np.unique(claims.VERDICTS).size == 7


def test_sd_interval_uses_chi_square_quantiles():
    # two degrees of freedom: chi2 quantiles have the closed form -2 ln(1 - q)
    low_q, high_q = -2 * math.log(1 - 0.025), -2 * math.log(1 - 0.975)
    low, high = power.sd_interval(1.0, 3)
    assert low == pytest.approx(math.sqrt(2 / high_q)) and high == pytest.approx(
        math.sqrt(2 / low_q)
    )
    assert (low, high) == pytest.approx((0.5207, 6.2847), abs=1e-4)
    # scales with the sample s.d.; narrows as seeds grow
    assert power.sd_interval(2.0, 3) == pytest.approx((2 * low, 2 * high))
    wide, narrow = power.sd_interval(1.0, 5), power.sd_interval(1.0, 50)
    assert wide[0] < narrow[0] < 1 < narrow[1] < wide[1]
