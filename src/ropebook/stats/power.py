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
from dataclasses import dataclass

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
    """Fewest paired seeds whose t-test detects ``effect`` with probability ``power``.

    The count starts just below the normal approximation ``(z_{1-α/2} + z_power)² (sd/δ)²``,
    which a t-test never beats (counting up from 2 takes seconds for thousands of seeds)."""
    if not (sd > 0 and effect > 0):
        raise ValueError(f"sd and effect must be > 0, got {sd}, {effect}")
    z = stats.norm.ppf(0.5 + confidence / 2) + stats.norm.ppf(power)
    n = max(2, int((z * sd / effect) ** 2) - 1)
    if n > limit:
        raise ValueError(f"more than {limit} seeds needed for effect {effect} at sd {sd}")
    if n > 2 and t_test_power(effect / sd, n, confidence) >= power:
        n = 2  # not below the answer after all: count up from the start
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


# ---------------------------------------------------------------- what would decide a claim
# An undecided claim must say what would decide it. For a mean tested against a threshold (a
# paired difference against 0, a share against its uniform value) that is a sample count: the
# paired samples (seeds, or windows of one seed) whose t-test detects the measured distance from
# the threshold at the measured s.d. The numbers live here; the sentences in ropebook.present.


@dataclass(frozen=True)
class SeedsToDecide:
    """How many paired samples would decide a mean against a threshold (:func:`seeds_to_decide`).

    ``effect``: the distance to detect (the measured one unless given), ``sd``: the s.d. of one
    sample (``nan`` when unknown), measured on the ``n`` samples when ``sd_measured`` and supplied
    from elsewhere (e.g. the book's seed plan) otherwise; ``needed``: the fewest paired samples
    whose two-sided t-test detects ``effect`` with ``power`` at ``confidence`` (``None`` when
    it cannot be said: no s.d., no effect, or more than ``limit``, then ``beyond_limit``)."""

    effect: float
    sd: float
    n: int
    sd_measured: bool
    needed: int | None
    beyond_limit: bool = False
    confidence: float = 0.95
    power: float = 0.8
    limit: int = 100_000

    def detectable(self, n: int) -> float:
        """The smallest effect ``n`` paired samples detect at this s.d. (``nan`` without one)."""
        if not (math.isfinite(self.sd) and n >= 2):
            return math.nan
        return min_detectable_effect(self.sd, n, confidence=self.confidence, power=self.power)


def _needed(
    sd: float, effect: float, confidence: float, power: float, limit: int
) -> tuple[int | None, bool]:
    """:func:`seeds_needed`, or ``(None, False)`` without an s.d. or an effect, ``(None, True)``
    beyond ``limit``."""
    if not (math.isfinite(sd) and math.isfinite(effect) and sd > 0 and effect > 0):
        return None, False
    try:
        return seeds_needed(sd, effect, confidence=confidence, power=power, limit=limit), False
    except ValueError:  # more than limit seeds
        return None, True


def seeds_to_decide(
    samples,
    *,
    threshold: float = 0.0,
    sd: float | None = None,
    effect: float | None = None,
    confidence: float = 0.95,
    power: float = 0.8,
    limit: int = 100_000,
) -> SeedsToDecide:
    """:class:`SeedsToDecide` for paired ``samples`` (one per seed, e.g. differences of losses)
    tested against ``threshold``. The s.d. is measured with two samples or more; with fewer,
    ``sd`` (the book's measured s.d. for that kind of comparison) stands in for it, if given.
    ``effect`` defaults to the measured ``|mean − threshold|``."""
    values = np.asarray(samples, np.float64).ravel()
    values = values[np.isfinite(values)]
    n = int(values.size)
    distance = _distance(float(values.mean()), threshold) if n else math.nan
    size = abs(distance) if effect is None else abs(float(effect))
    measured = n >= 2
    spread = float(np.std(values, ddof=1)) if measured else math.nan if sd is None else float(sd)
    needed, beyond = _needed(spread, size, confidence, power, limit)
    return SeedsToDecide(size, spread, n, measured, needed, beyond, confidence, power, limit)


def _distance(mean: float, threshold: float) -> float:
    """``mean − threshold``, 0 where it is only rounding (a mean *at* the threshold)."""
    d = mean - threshold
    return 0.0 if abs(d) <= 1e-12 * max(abs(mean), abs(threshold), 1.0) else d


def sd_from_interval(low: float, high: float, n: int, confidence: float = 0.95) -> float:
    """The s.d. of one sample behind a Student-t ``confidence`` interval ``low``–``high`` of the
    mean of ``n`` samples: ``(high − low)/2 · √n / t_{n−1}`` (``nan`` with fewer than 2)."""
    if n < 2 or not (math.isfinite(low) and math.isfinite(high)):
        return math.nan
    return float((high - low) / 2 * math.sqrt(n) / stats.t.ppf(0.5 + confidence / 2, n - 1))


def seeds_to_decide_interval(
    mean: float,
    low: float,
    high: float,
    n: int,
    *,
    threshold: float = 0.0,
    sd: float | None = None,
    confidence: float = 0.95,
    power: float = 0.8,
    limit: int = 100_000,
) -> SeedsToDecide:
    """:func:`seeds_to_decide` for a mean known only by its t-interval over ``n`` samples (the
    s.d. recovered with :func:`sd_from_interval`; with one sample, ``sd`` if given)."""
    measured = n >= 2
    spread = sd_from_interval(low, high, n, confidence) if measured else sd
    spread = math.nan if spread is None else float(spread)
    size = abs(_distance(mean, threshold)) if math.isfinite(mean) else math.nan
    needed, beyond = _needed(spread, size, confidence, power, limit)
    return SeedsToDecide(size, spread, int(n), measured, needed, beyond, confidence, power, limit)


def paired_log_percent(comparison) -> np.ndarray:
    """The paired per-seed differences of a comparison (``.difference.values``; e.g. a
    :class:`ropebook.analysis.ablation.Comparison`) on the scale its t-test uses: for a
    ``percent`` comparison the difference of losses ×100 (a log-ratio in %, ≈ % of perplexity
    for small differences; the book's paired s.d.s are on this scale), else as they are."""
    values = np.asarray(comparison.difference.values, np.float64)
    if getattr(comparison.difference, "scale", "linear") == "percent":
        return 100 * np.log1p(values / 100)
    return values


def two_look_error(confidence: float = 0.95, first_share: float = 0.5) -> float:
    """The chance that a null effect is called (its two-sided interval excludes zero) at either of
    two looks, each at ``confidence``, the first on ``first_share`` of the final data (z-tests;
    the two statistics correlate by ``sqrt(first_share)``): above ``1 - confidence`` because a
    design that looks twice gets two chances (Armitage et al.'s repeated significance tests)."""
    if not 0 < first_share < 1 or not 0 < confidence < 1:
        raise ValueError("first_share and confidence must lie in (0, 1)")
    z = stats.norm.ppf(0.5 + confidence / 2)
    rho = math.sqrt(first_share)
    both = stats.multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]])
    # P(|Z1| < z and |Z2| < z) by inclusion-exclusion over the square's corners
    inside = both.cdf([z, z]) - both.cdf([-z, z]) - both.cdf([z, -z]) + both.cdf([-z, -z])
    return float(1 - inside)
