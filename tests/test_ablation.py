"""Ablation helpers: intervals over seeds, pairwise orderings, Kendall τ, extrapolation, and the
Table 1 constructions, on constructed numbers with known answers."""

import math

import jax
import numpy as np
import pytest
from scipy import stats

from ropebook import model, rope
from ropebook.analysis import ablation


def test_estimate_matches_student_t():
    values = [1.0, 2.0, 4.0]
    est = ablation.estimate(values)
    half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3)
    assert est.mean == pytest.approx(7 / 3)
    assert (est.low, est.high) == pytest.approx((7 / 3 - half, 7 / 3 + half))
    assert est.n == 3 and est.format(2).startswith("2.33 ± ")
    single = ablation.estimate([5.0])
    assert single.low == single.high == 5.0 and "1 seed" in single.format()


def test_separated_intervals_confirm_the_order():
    c = ablation.compare("a", [1.0, 1.1, 0.9], "b", [2.0, 2.1, 1.9])
    assert c.separated and c.paired_separated and c.lower == "a"
    assert c.status == "a < b"
    assert c.verdict("a") == "held" and c.verdict("b") == "not held"
    assert c.difference.mean == pytest.approx(-1.0) and c.difference.high < 0
    with pytest.raises(ValueError):
        c.verdict("c")


def test_overlapping_intervals_are_within_noise():
    c = ablation.compare("a", [1.0, 2.0, 3.0], "b", [1.5, 2.5, 3.5])
    assert not c.separated and c.status == "within noise"
    assert c.verdict("a", test="intervals") == "partly" == c.verdict("b", test="intervals")
    # ...but the paired difference is exactly -0.5 on every seed: zero spread, excludes 0.
    assert c.difference.mean == pytest.approx(-0.5) and c.paired_separated
    assert c.paired_status == "a < b"
    assert c.verdict("a") == "held" and c.verdict("b") == "not held"


def test_paired_noise_is_within_noise():
    # a - b = (-1, +1, -0.5): the paired interval straddles 0 although means differ
    c = ablation.compare("a", [1.0, 3.0, 2.0], "b", [2.0, 2.0, 2.5])
    assert c.paired and not c.paired_separated and c.paired_status == "within noise"
    assert c.verdict("a") == "partly"
    with pytest.raises(ValueError, match="unknown test"):
        c.verdict("a", test="bayes")


def test_single_seed_is_not_testable():
    c = ablation.compare("a", [1.0], "b", [2.0])
    assert not c.testable and not c.separated and c.status == "single seed"
    assert c.verdict("a") == "not testable here"


def test_unpaired_difference_when_seed_counts_differ():
    c = ablation.compare("a", [1.0, 1.2], "b", [3.0, 3.2, 3.1])
    assert c.difference.mean == pytest.approx(1.1 - 3.1)
    assert c.difference.high < 0
    # not paired: the verdict falls back to the two intervals
    assert not c.paired and c.paired_status == c.status == "a < b" and c.verdict("a") == "held"


def test_kendall_tau_known_values():
    reference = {"x": 1.0, "y": 2.0, "z": 3.0, "w": 4.0}
    assert ablation.kendall_tau({"x": 10, "y": 20, "z": 30, "w": 40}, reference)[0] == 1.0
    assert ablation.kendall_tau({"x": 4, "y": 3, "z": 2, "w": 1}, reference)[0] == -1.0
    # one discordant pair (z, w) out of six: τ = (5 - 1) / 6
    tau, p = ablation.kendall_tau({"x": 1, "y": 2, "z": 4, "w": 3}, reference)
    assert tau == pytest.approx(4 / 6) and 0 < p <= 1
    # names missing from the measurement are skipped
    assert ablation.kendall_tau({"x": 1, "y": 2}, reference)[0] == 1.0
    assert ablation.rank_order({"b": 2.0, "a": 1.0, "c": 3.0}) == ["a", "b", "c"]


def test_per_seed_tau_and_noise_ratio():
    values = {"x": [1.0, 1.1, 2.5], "y": [2.0, 2.1, 1.5], "z": [3.0, 3.1, 3.5]}
    reference = {"x": 1.0, "y": 2.0, "z": 3.0}
    assert ablation.per_seed_tau(values, reference) == pytest.approx([1.0, 1.0, 1 / 3])
    table = ablation.seed_table({"x": [1.0, 1.0 + 1e-3], "y": [5.0, 5.0 + 1e-3]})
    noise = ablation.noise_vs_differences(table)
    assert noise["gap"] == pytest.approx(4.0) and noise["ratio"] > 1000
    with pytest.raises(ValueError):
        ablation.per_seed_tau({"x": [1.0], "y": [1.0, 2.0]}, reference)


def test_paired_noise_removes_shared_seed_effects():
    # every variant shares a large per-seed offset (0, 10, 20); the variants differ by 1 and 2
    offsets = np.array([0.0, 10.0, 20.0])
    values = {"x": offsets + 1.0, "y": offsets + 2.0 + [0, 0.1, -0.1], "z": offsets + 3.0}
    unpaired = ablation.noise_vs_differences(ablation.seed_table(values))
    paired = ablation.paired_noise(values)
    assert unpaired["ratio"] < 0.2  # the offsets swamp the gaps...
    # ...pairs (x,y), (x,z), (y,z): |Δ| = 1, 2, 1; s.d. of Δ = 0.1, 0, 0.1
    assert paired["gap"] == pytest.approx(1.0) and paired["seed_sd"] == pytest.approx(0.1)
    assert paired["ratio"] == pytest.approx(10.0)
    with pytest.raises(ValueError, match="same"):
        ablation.paired_noise({"x": [1.0, 2.0], "y": [1.0]})


def test_combine_verdicts():
    assert ablation.combine_verdicts(["held", "held"]) == "held"
    assert ablation.combine_verdicts(["held", "not held"]) == "partly"
    assert ablation.combine_verdicts(["held", "not testable here"]) == "not testable here"
    with pytest.raises(ValueError):
        ablation.combine_verdicts([])


def test_binned_ppl_over_curves():
    curves = [
        ablation.ExtrapolationCurve(np.log(np.full(8, 2.0 + s)), context=4, n_windows=1)
        for s in range(3)
    ]
    assert curves[0].ppl_at(1) == pytest.approx(2.0) and curves[2].ppl_at(2) == pytest.approx(4.0)
    rows = ablation.binned_ppl(curves, bin_width=4)
    assert [r["start"] for r in rows] == [0, 4]
    assert rows[0]["ppl"] == pytest.approx(3.0) and rows[0]["low"] < 3.0 < rows[0]["high"]
    assert rows[1]["x context"] == pytest.approx(1.5)
    with pytest.raises(ValueError):
        curves[0].ppl_at(4)


@pytest.fixture(scope="module")
def tiny_model():
    config = model.ModelConfig(
        vocab_size=64, n_layers=1, n_heads=2, d_model=16, d_ff=32, context=8,
        encoding="p-rope", proportion=0.75,
    )  # fmt: skip
    params = model.init_params(jax.random.key(0), config)
    tokens = (np.arange(2_000) * 7 % 64).astype(np.uint16)
    return params, config, tokens


def test_extrapolation_curve_is_finite_at_4x_context(tiny_model):
    params, config, tokens = tiny_model
    curve = ablation.extrapolation_curve(
        params, config, tokens, max_factor=4, n_windows=3, seed=0, batch_size=2
    )
    assert curve.losses.shape == (4 * config.context,)
    assert np.all(np.isfinite(curve.losses))
    for factor in (1, 2, 4):
        assert math.isfinite(curve.ppl_at(factor)) and curve.ppl_at(factor) > 1


def test_long_window_prefix_is_a_short_window(tiny_model):
    """Causality: the losses of the first L positions of a 4L window equal those of the L window."""
    params, config, tokens = tiny_model
    window = np.asarray(tokens[None, : 4 * config.context + 1], dtype=np.int32)
    long = np.asarray(model.token_losses(params, window, config))[0]
    short = np.asarray(model.token_losses(params, window[:, : config.context + 1], config))[0]
    np.testing.assert_allclose(long[: config.context], short, rtol=1e-5, atol=1e-5)


def test_p_rope_fast_planes_build_positional_heads():
    d, p, n = 16, 0.75, 64
    rotating = ablation.rotating_planes(d, variant="p-rope", proportion=p)
    assert rotating.sum() == 6 and not rotating[6:].any()
    psi = ablation.plane_vector(d, rotating)
    grid = rope.frequencies(d, variant="p-rope", proportion=p)
    weights = rotating / rotating.sum()
    margin = ablation.positional_margin(weights, grid, n)
    eps = 0.01
    scale = math.log(n * (1 - eps) / eps) / margin
    for offset in (0, 1):
        attention = ablation.positional_attention(
            psi, n, scale=scale, offset=offset, variant="p-rope", proportion=p
        )
        np.testing.assert_allclose(attention.sum(-1), 1, rtol=1e-5)
        assert ablation.min_target_attention(attention, offset) > 1 - eps
    # The same construction on the free (slow) planes is NoPE: uniform over the prefix.
    free = ablation.plane_vector(d, ~rotating)
    attention = ablation.positional_attention(free, n, scale=scale, variant="p-rope", proportion=p)
    np.testing.assert_allclose(np.diag(attention), 1 / np.arange(1, n + 1), rtol=1e-4)


def test_free_planes_score_exactly_position_invariant():
    d = 16
    rotating = ablation.rotating_planes(d, variant="p-rope", proportion=0.75)
    free = ablation.plane_vector(d, ~rotating)
    distances = np.array([0, 1, 10, 10_000, 1_000_000])
    scores = ablation.plane_scores(free, distances, variant="p-rope", proportion=0.75)
    assert np.all(scores == scores[0]) and scores[0] == pytest.approx(1.0)
    # Under RoPE the slowest plane turns: cos(r g) with g = base^(-(d-2)/d).
    slow = ablation.plane_vector(d, [d // 2 - 1])
    g = rope.base_frequencies(d)[-1]
    rope_scores = ablation.plane_scores(slow, distances)
    np.testing.assert_allclose(rope_scores, np.cos(distances * g), atol=2e-3)
    assert rope_scores[-2] < 0  # at 10,000 tokens the slowest plane points backwards
