"""Noise anatomy: estimates against closed forms, and against simulated runs of known variances
(seeded), whose intervals must cover the truth about as often as they claim."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ropebook.stats import anatomy, noise

TREND = np.array([0.30, 0.20, 0.14, 0.10, 0.08, 0.07])  # a schedule's shared descent (nats)


def simulate(
    rng: np.random.Generator,
    n: int,
    *,
    seed_sd: float = 0.02,
    jitter: float = 0.005,
    rho: float = 0.6,
    offset: float = 0.01,
    windows: int = 0,
    window_sd: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """Two arms' losses (nats) at the last ``len(TREND)`` evaluations of ``n`` seeds: loss =
    4 + trend + seed level (s.d. ``seed_sd``, correlated ``rho`` across arms) + independent jitter
    per evaluation (s.d. ``jitter``); with ``windows``, per-window losses around it."""
    levels = rng.multivariate_normal([0, 0], seed_sd**2 * np.array([[1, rho], [rho, 1]]), n)
    arms = []
    for arm in range(2):
        loss = 4 + arm * offset + TREND + levels[:, arm, None]
        arms.append(loss + rng.normal(0, jitter, (n, len(TREND))))
    if windows:
        shared = rng.normal(0, window_sd, windows)  # hard windows are hard for every model
        arms = [
            x[..., None] + shared + rng.normal(0, window_sd / 4, (*x.shape, windows)) for x in arms
        ]
    return arms[0], arms[1]


def truth(seed_sd=0.02, jitter=0.005, rho=0.6) -> dict[str, float]:
    """What :func:`simulate` draws from, in percent."""
    arm_var = seed_sd**2 + jitter**2
    return {
        "jitter": 100 * jitter,
        "seed_sd": 100 * math.sqrt(arm_var),
        "correlation": rho * seed_sd**2 / arm_var,
        "paired_sd": 100 * math.sqrt(2 * arm_var - 2 * rho * seed_sd**2),
        "pairing_gain": 2 * arm_var / (2 * arm_var - 2 * rho * seed_sd**2),
    }


def test_many_seeds_recover_the_simulated_variances():
    a, b = simulate(np.random.default_rng(1), 4000)
    result = anatomy.anatomy(a, b, resamples=200)
    want = truth()
    for name, estimate in [
        ("jitter", result.jitter), ("seed_sd", result.seed_sd_a), ("seed_sd", result.seed_sd_b),
        ("correlation", result.correlation), ("paired_sd", result.paired_sd),
        ("pairing_gain", result.pairing_gain),
    ]:  # fmt: skip
        assert estimate.low <= want[name] <= estimate.high, (name, estimate, want[name])
        assert estimate.high - estimate.low < 0.1 * abs(want[name]), (name, estimate)
    assert result.jitter.df == 2 * 3999 * 5 and result.paired_sd.df == 3999
    assert result.split is None
    assert result.jitter_share == pytest.approx(want["jitter"] ** 2 / want["seed_sd"] ** 2, rel=0.1)


def test_intervals_cover_the_truth_as_often_as_they_claim():
    """Over 1000 simulated experiments of 8 seeds, each 95 % interval covers the true value in
    between 93 % and 97 % of them (±3 binomial s.d.s of 1000 draws at 95 %)."""
    rng = np.random.default_rng(7)
    want = truth()
    names = ("jitter", "seed_sd_a", "correlation", "paired_sd", "pairing_gain")
    covered = dict.fromkeys(names, 0)
    trials = 1000
    for _ in range(trials):
        result = anatomy.anatomy(*simulate(rng, 8), resamples=100)
        for name in names:
            e = getattr(result, name)
            covered[name] += e.low <= want[name.removesuffix("_a")] <= e.high
    rates = {name: count / trials for name, count in covered.items()}
    for name in ("jitter", "seed_sd_a", "correlation", "paired_sd"):
        assert 0.93 <= rates[name] <= 0.97, rates
    assert 0.85 <= rates["pairing_gain"] <= 0.97, rates  # a bootstrap over 8 seeds undercovers


def test_closed_forms():
    sd = anatomy.sd_estimate(2.0, 7)
    chi2 = stats.chi2.ppf([0.975, 0.025], 7)
    assert (sd.low, sd.high) == pytest.approx(tuple(2.0 * np.sqrt(7 / chi2)))
    assert sd.method == "chi-square" and sd.df == 7
    x = np.array([1.0, 2.0, 4.0, 3.0, 6.0, 5.0])
    y = np.array([1.5, 1.0, 3.5, 4.0, 5.0, 6.5])
    r = np.corrcoef(x, y)[0, 1]
    corr = anatomy.correlation_estimate(x, y)
    half = 1.959963984540054 / math.sqrt(3)
    assert (corr.value, corr.low, corr.high) == pytest.approx(
        (r, math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half))
    )
    assert math.isnan(anatomy.correlation_estimate(x[:3], y[:3]).low)  # Fisher z needs n ≥ 4
    ratio = anatomy.sd_ratio(anatomy.sd_estimate(1.0, 7), anatomy.sd_estimate(2.0, 11))
    f = stats.f.ppf([0.975, 0.025], 7, 11)
    assert (ratio.value, ratio.low, ratio.high) == pytest.approx((0.5, *(0.5 / np.sqrt(f))))
    with pytest.raises(ValueError, match="two s.d. estimates with degrees of freedom"):
        anatomy.sd_ratio(corr, anatomy.sd_estimate(1.0, 3))


def test_jitter_ignores_levels_and_the_shared_descent():
    """Only the interaction of seed and evaluation is jitter; by hand on a 2 × 2 table the
    residual is ±d/4 in every cell, so its mean square on 1 d.f. is d²/4."""
    table = np.array([[1.0, 0.5], [3.0, 2.5]])  # seed 1 is 2 higher, both fall 0.5: no jitter
    assert anatomy.jitter_sd(table) == (0.0, 1)
    sd, df = anatomy.jitter_sd(table + np.array([[0.2, 0.0], [0.0, 0.0]]))
    assert df == 1 and sd == pytest.approx(math.sqrt(0.2**2 / 4))


def test_per_window_losses_add_the_noise_split_and_agree_with_their_means():
    a, b = simulate(np.random.default_rng(3), 8, windows=32)
    with_windows = anatomy.anatomy(a, b)
    means = anatomy.anatomy(a.mean(axis=2), b.mean(axis=2))
    for name in ("jitter", "seed_sd_a", "correlation", "paired_sd", "pairing_gain"):
        assert getattr(with_windows, name).value == pytest.approx(getattr(means, name).value)
    assert with_windows.split == noise.split(100 * a[:, -1] - 100 * b[:, -1])
    assert means.split is None


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    shift=st.floats(-3, 3),
    scale=st.floats(0.1, 10),
)
def test_estimates_follow_shifts_scales_and_swaps(seed, shift, scale):
    a, b = simulate(np.random.default_rng(seed), 6)
    base = anatomy.anatomy(a, b, resamples=50)
    trend = np.linspace(0, 1, len(TREND))
    moved = anatomy.anatomy(
        scale * a + shift + trend, scale * b + shift + trend, resamples=50
    )  # a common shift or descent is no noise; a scale scales every s.d.
    for name in ("jitter", "seed_sd_a", "seed_sd_b", "paired_sd"):
        assert getattr(moved, name).value == pytest.approx(
            scale * getattr(base, name).value, rel=1e-6, abs=1e-9
        )
    assert moved.correlation.value == pytest.approx(base.correlation.value, abs=1e-9)
    swapped = anatomy.anatomy(b, a, resamples=50)
    assert swapped.seed_sd_a == base.seed_sd_b and swapped.paired_sd.value == pytest.approx(
        base.paired_sd.value
    )
    assert swapped.pairing_gain.value == pytest.approx(base.pairing_gain.value)


@pytest.mark.parametrize(
    "shape_a, shape_b, message",
    [
        ((8, 4), (8, 5), "of one shape, got"),
        ((8,), (8,), r"\[seeds, evaluations\]"),
        ((2, 4), (2, 4), "at least 3 seeds"),
        ((8, 1), (8, 1), "2 evaluations"),
        ((8, 4, 1), (8, 4, 1), "2 windows"),
    ],
)
def test_bad_input_names_the_problem(shape_a, shape_b, message):
    with pytest.raises(ValueError, match=message):
        anatomy.anatomy(np.ones(shape_a), np.ones(shape_b))
    with pytest.raises(ValueError, match="finite"):
        anatomy.anatomy(np.full((4, 3), np.nan), np.ones((4, 3)))


def test_paired_sd_ratio_bounds_are_where_pitman_morgan_just_rejects():
    """At each bound the Pitman-Morgan statistic of x against y rescaled to that ratio equals
    the t quantile; strongly correlated samples give a narrower interval than the F one."""
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(3)
    x = rng.standard_normal(8)
    y = 0.8 * x + 0.3 * rng.standard_normal(8)
    ratio = anatomy.paired_sd_ratio(x, y)
    assert ratio.value == pytest.approx(np.std(x, ddof=1) / np.std(y, ddof=1))
    assert ratio.low < ratio.value < ratio.high
    t = scipy_stats.t.ppf(0.975, 6)
    for bound in (ratio.low, ratio.high):
        scaled = bound * y
        r = np.corrcoef(x + scaled, x - scaled)[0, 1]
        assert abs(r) * np.sqrt(6) / np.sqrt(1 - r**2) == pytest.approx(t, rel=1e-6)
    independent = anatomy.sd_ratio(
        anatomy.sd_estimate(np.std(x, ddof=1), 7), anatomy.sd_estimate(np.std(y, ddof=1), 7)
    )
    assert ratio.high - ratio.low < (independent.high - independent.low) / 2
    with pytest.raises(ValueError, match="length >= 3"):
        anatomy.paired_sd_ratio(x[:2], y[:2])
