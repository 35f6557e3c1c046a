"""What a run can resolve: minimum detectable effects and seed counts for paired comparisons.

Zoo models of the same seed share their initialisation key and every training batch, so two
encodings are compared through the *paired* differences ``d_s = loss_a(s) - loss_b(s)`` over
seeds ``s``. A two-sided one-sample t-test on ``n`` such differences with standard deviation
``sd`` detects a true mean difference ``δ`` with probability (power)

    P(|T| > t_{1-α/2, n-1}),  T ~ noncentral t(n-1, δ·√n / sd).

:func:`min_detectable_effect` solves this for ``δ``: a non-significant result then bounds the
effect at roughly that size, and a claimed effect much smaller than it cannot be decided by the
run. Differences of losses (nats) are log-ratios of perplexities: ``exp(δ) - 1`` is the relative
perplexity change (:func:`percent_of_perplexity`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats


def _check(n: int, confidence: float, power: float) -> None:
    if n < 2:
        raise ValueError(f"a t-test needs at least 2 paired samples, got n={n}")
    if not (0 < confidence < 1 and 0 < power < 1):
        raise ValueError(f"confidence and power must lie in (0, 1), got {confidence}, {power}")


def t_test_power(effect_size: float, n: int, confidence: float = 0.95) -> float:
    """Power of a two-sided one-sample t-test on ``n`` samples at standardised ``effect_size``
    (``δ / sd``): the exact noncentral-t probability of rejecting ``δ = 0``."""
    _check(n, confidence, 0.5)
    df, shift = n - 1, effect_size * math.sqrt(n)
    critical = stats.t.ppf(0.5 + confidence / 2, df)
    value = stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift)
    if not np.isfinite(value):  # scipy's noncentral t fails far in the tails: normal limit
        value = stats.norm.sf(critical - shift) + stats.norm.cdf(-critical - shift)
    return float(value)


def min_detectable_effect(
    sd: float, n: int, *, confidence: float = 0.95, power: float = 0.8
) -> float:
    """Smallest true mean difference that a paired two-sided t-test on ``n`` differences of
    standard deviation ``sd`` detects with probability ``power`` (same units as ``sd``)."""
    _check(n, confidence, power)
    if not sd > 0:
        return 0.0 if sd == 0 else math.nan
    high = 1.0
    while t_test_power(high, n, confidence) < power:  # bracket the root from above
        high *= 2
    size = optimize.brentq(lambda d: t_test_power(d, n, confidence) - power, 0.0, high)
    return float(size * sd)


def seeds_needed(
    sd: float, effect: float, *, confidence: float = 0.95, power: float = 0.8, limit: int = 100_000
) -> int:
    """Fewest paired seeds whose t-test detects ``effect`` with probability ``power``."""
    if not (sd > 0 and effect > 0):
        raise ValueError(f"sd and effect must be > 0, got {sd}, {effect}")
    n = 2
    while t_test_power(effect / sd, n, confidence) < power:
        n += 1
        if n > limit:
            raise ValueError(f"more than {limit} seeds needed for effect {effect} at sd {sd}")
    return n


def normal_seeds_per_arm(
    sd: float, effect: float, *, confidence: float = 0.95, power: float = 0.8
) -> float:
    """Large-sample seeds per arm of an *unpaired* comparison: ``2 (z_{1-α/2} + z_power)² (sd/δ)²``
    (≈ 16 (sd/δ)², Lehr's rule) — what the book would need without pairing."""
    z = stats.norm.ppf(0.5 + confidence / 2) + stats.norm.ppf(power)
    return float(2 * z**2 * (sd / effect) ** 2)


def percent_of_perplexity(loss_difference: float) -> float:
    """A loss (nats) difference as a relative perplexity change in percent: ``100 (e^δ - 1)``."""
    return float(100 * np.expm1(loss_difference))


def bound_text(low: float, high: float, *, unit: str = "%") -> str:
    """A non-significant interval read as a bound on the effect: ``"|Δ| < 0.8 %"``."""
    return f"|Δ| < {max(abs(low), abs(high)):.2g} {unit}"


def sd_interval(sd: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided ``confidence`` interval for a normal population's standard deviation from a
    sample s.d. ``sd`` of ``n`` values: ``sd·√((n−1)/χ²_{1−α/2, n−1}) .. sd·√((n−1)/χ²_{α/2, n−1})``.
    With 3 seeds (2 degrees of freedom) it spans 0.52× to 6.3× the sample s.d."""
    _check(n, confidence, 0.5)
    df, tail = n - 1, (1 - confidence) / 2
    return (
        float(sd * math.sqrt(df / stats.chi2.ppf(1 - tail, df))),
        float(sd * math.sqrt(df / stats.chi2.ppf(tail, df))),
    )
