"""Additive-bias encodings and the measures the pe_zoo chapter reads them with."""

from __future__ import annotations

import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import toeplitz

from ropebook import encodings, model
from ropebook.analysis import biases
from ropebook.present import biases as show


def _bias(name: str, n_heads: int, t: int, context: int, key: int = 0):
    enc = encodings.EncodingConfig(name)
    params = encodings.init_params(jax.random.key(key), enc, n_heads)
    positions = jnp.arange(t)
    return params, np.asarray(encodings.bias(params, enc, n_heads, positions, positions, context))


def _tiny(encoding: str) -> model.ModelConfig:
    return model.ModelConfig(
        vocab_size=32, n_layers=2, n_heads=4, d_model=32, d_ff=64, context=16, encoding=encoding
    )


# ---------------------------------------------------------------- Toeplitz measures


def test_toeplitz_matrix_has_zero_deviation_and_full_r2():
    rng = np.random.default_rng(0)
    a = toeplitz(rng.normal(size=40))
    assert biases.toeplitz_deviation(a) == 0.0
    assert np.allclose(biases.diagonal_spread(a)[:-1], 0.0)
    assert np.isnan(biases.diagonal_spread(a)[-1])  # the corner diagonal has a single entry
    assert biases.distance_r2(a) == pytest.approx(1.0)


def test_one_perturbed_entry_shows_up_on_its_diagonal_only():
    a = toeplitz(np.arange(10.0))
    a[7, 3] += 0.25  # diagonal r = 4
    spread = biases.diagonal_spread(a)
    assert spread[4] == pytest.approx(0.25)
    assert np.nansum(np.delete(spread, 4)) == 0.0
    assert biases.toeplitz_deviation(a) == pytest.approx(0.25)
    assert biases.toeplitz_deviation(a, relative=True) == pytest.approx(0.25 / 9.0)  # range 0..9
    # restricted to rows before the perturbation, the matrix is Toeplitz again
    assert biases.toeplitz_deviation(a, row_stop=7) == 0.0
    # entries above the diagonal are never read
    b = toeplitz(np.arange(10.0))
    b[2, 8] = 1e6
    assert biases.toeplitz_deviation(b) == 0.0


def test_distance_frame_hand_example_and_masked_entries():
    a = np.array([[1.0, -np.inf, -np.inf], [2.0, 3.0, -np.inf], [4.0, 5.0, 6.0]])
    frame = biases.distance_frame(a)
    expected = np.array([[1.0, np.nan, np.nan], [3.0, 2.0, np.nan], [6.0, 5.0, 4.0]])
    np.testing.assert_array_equal(frame, expected)
    np.testing.assert_allclose(biases.diagonal_spread(a)[:2], [5.0, 3.0])
    np.testing.assert_allclose(biases.distance_profile(a), [10 / 3, 3.5, 4.0])


def test_noise_is_not_explained_by_distance():
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(3, 200, 200))
    r2 = biases.distance_r2(noise)
    assert r2.shape == (3,)
    assert np.all(r2 < 0.05)
    assert biases.toeplitz_deviation(noise, relative=True) > 0.5


def test_block_pool_keeps_masked_blocks_blank():
    a = biases.causal_only(np.ones((8, 8)))
    pooled = biases.block_pool(a, 4)
    assert pooled.shape == (4, 4)
    assert np.all(np.isnan(pooled[np.triu_indices(4, 1)]))
    np.testing.assert_allclose(pooled[np.tril_indices(4)], 1.0)
    assert biases.block_pool(a, 8) is not None and biases.block_pool(a, 8).shape == (8, 8)
    m = np.arange(36.0).reshape(6, 6)
    np.testing.assert_allclose(biases.block_pool(m, 3), m.reshape(3, 2, 3, 2).mean((1, 3)))


# ---------------------------------------------------------------- ALiBi


@pytest.mark.parametrize("n_heads", [4, 8, 12])
def test_alibi_slopes_are_powers_of_two(n_heads):
    h = np.arange(1, n_heads + 1)
    np.testing.assert_array_equal(encodings.alibi_slopes(n_heads), 2.0 ** (-8.0 * h / n_heads))


def test_alibi_bias_is_minus_slope_times_distance_and_fits_back():
    n_heads, t = 12, 96
    _, bias = _bias("alibi", n_heads, t, context=32)
    slopes = 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)
    i, j = np.tril_indices(t)
    expected = -slopes[:, None] * (i - j)[None, :]
    np.testing.assert_allclose(bias[:, i, j], expected, rtol=1e-6, atol=1e-6)
    fitted, residual = biases.fit_slopes(bias)
    np.testing.assert_allclose(fitted, slopes, rtol=1e-6)
    assert np.all(residual < 1e-4)


def test_alibi_bias_in_model_internals():
    config = _tiny("alibi")
    params = model.init_params(jax.random.key(0), config)
    tokens = jnp.arange(24)[None] % config.vocab_size
    _, internals = model.forward(params, tokens, config, return_internals=True)
    bias = np.asarray(internals[-1]["bias"])  # longer than the context: 24 > 16
    fitted, residual = biases.fit_slopes(bias)
    np.testing.assert_allclose(fitted, encodings.alibi_slopes(4), rtol=1e-6)
    assert np.all(residual < 1e-5)


def test_alibi_ranges_match_cable_figure_ticks():
    # CABLE Fig. 12 colour bars (12 heads, context 512): most negative labelled tick and spacing.
    ticks = [(300, 50), (200, 25), (120, 20), (80, 10), (50, 10), (30, 5), (20, 2.5), (12, 2),
             (7, 1), (5, 1), (3, 0.5), (1.75, 0.25)]  # fmt: skip
    ranges = 511 * encodings.alibi_slopes(12)
    assert all(biases.alibi_bracket(v, t, s) for v, (t, s) in zip(ranges, ticks, strict=True))
    assert not biases.alibi_bracket(511 * 2 ** (-8 / 8), 300, 50)  # 8-head slopes would not fit


def test_reach_of_alibi_is_closed_form():
    slopes = encodings.alibi_slopes(12)
    r = np.arange(4096)
    profile = -slopes[:, None] * r
    for threshold in (0.5, 0.1, 0.01):
        expected = np.ceil(math.log(1 / threshold) / slopes - 1e-9)
        expected = np.where(expected < len(r), expected, np.inf)
        np.testing.assert_array_equal(biases.bias_reach(profile, threshold), expected)
    assert biases.bias_reach(np.zeros((2, 10)), 0.1).tolist() == [np.inf, np.inf]


# ---------------------------------------------------------------- Kerple and FIRE


def test_kerple_bias_is_toeplitz_and_log_shaped():
    params, bias = _bias("kerple", 6, 80, context=32, key=3)
    assert biases.toeplitz_deviation(bias) < 1e-6
    assert np.allclose(biases.distance_r2(bias), 1.0)
    r1 = np.logaddexp(0, np.asarray(params["r1"]))[:, None]
    r2 = np.logaddexp(0, np.asarray(params["r2"]))[:, None]
    profile = biases.distance_profile(bias)
    np.testing.assert_allclose(profile, -r1 * np.log1p(r2 * np.arange(80)), rtol=1e-5, atol=1e-5)


def test_kerple_model_internals_are_toeplitz_in_every_layer():
    config = _tiny("kerple")
    params = model.init_params(jax.random.key(1), config)
    tokens = jax.random.randint(jax.random.key(2), (1, 40), 0, config.vocab_size)
    _, internals = model.forward(params, tokens, config, return_internals=True)
    for layer in internals:
        assert biases.toeplitz_deviation(np.asarray(layer["bias"])) < 1e-6


def test_fire_bias_beyond_training_length_is_finite_and_toeplitz_only_below_L():
    context, t = 16, 128
    params, bias = _bias("fire", 4, t, context=context, key=5)
    assert np.all(np.isfinite(bias))
    threshold = biases.fire_threshold(params, context)
    assert threshold == pytest.approx(context)  # initial multiplier 1
    assert biases.toeplitz_deviation(bias, row_stop=math.ceil(threshold)) < 1e-5
    assert biases.toeplitz_deviation(bias) > 1e-3  # rows i >= L share no normaliser


def test_rope_scores_are_not_toeplitz():
    config = _tiny("rope")
    params = model.init_params(jax.random.key(3), config)
    tokens = jax.random.randint(jax.random.key(4), (1, 16), 0, config.vocab_size)
    _, internals = model.forward(params, tokens, config, return_internals=True)
    scores = np.asarray(internals[-1]["scores"][0])
    assert internals[-1]["bias"] is None
    assert biases.toeplitz_deviation(scores, relative=True) > 0.05
    assert np.all(biases.distance_r2(scores) < 0.99)


# ---------------------------------------------------------------- orderings


def test_kendall_tau():
    assert biases.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 10, "b": 20, "c": 30}) == 1.0
    assert biases.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}) == -1.0


def test_separation_verdict():
    assert biases.separation_verdict([(1.0, 0.5, 1.5), (0.2, 0.1, 0.3)], n_seeds=3) == "held"
    straddles = [(1.0, 0.5, 1.5), (0.0, -0.1, 0.1)]
    assert biases.separation_verdict(straddles, n_seeds=3) == "cannot decide"
    below = [(1.0, 0.5, 1.5), (-0.2, -0.3, -0.1)]
    assert biases.separation_verdict(below, n_seeds=3) == "not held"


def test_one_seed_decides_no_comparison_however_narrow_its_windows():
    """Intervals over the windows of one model of each encoding: shown, never decided on."""
    clear, against = [(1.0, 0.5, 1.5)], [(-1.0, -1.5, -0.5)]
    for differences in (clear, against):
        assert biases.separation_verdict(differences, n_seeds=1) == "cannot decide"
        assert biases.order_verdict(differences, n_seeds=1) == "cannot decide"
    assert biases.separation_verdict(clear, n_seeds=biases.MIN_SEEDS) == "held"
    assert biases.separation_verdict(against, n_seeds=biases.MIN_SEEDS) == "not held"
    assert biases.replicated("held", 1) == "cannot decide"
    assert biases.replicated("not held", 2) == "not held"


def test_content_verdict_over_seeds():
    """Fig. 15: R² below 0.5 over RoPE's seeds held, above not held, across cannot decide; one
    seed cannot decide whatever its windows say."""
    assert biases.content_verdict(0.1, 0.3, 3) == "held"
    assert biases.content_verdict(0.6, 0.8, 3) == "not held"
    assert biases.content_verdict(0.4, 0.6, 3) == "cannot decide"
    assert biases.content_verdict(0.1, 0.3, 1) == "cannot decide"
    assert biases.content_verdict(0.6, 0.8, 1) == "cannot decide"


def test_fire_rows_past_and_toeplitz_verdict():
    """Only rows i > L can break FIRE's Toeplitz pattern: with none the claim is uninformative
    (Toeplitz by construction), else decided by the spread against the tolerance."""
    assert biases.rows_past(128.0, 128) == 0  # L at the context = the figure's length
    assert biases.rows_past(126.5, 128) == 1  # row 127 only
    assert biases.rows_past(126.0, 128) == 1  # row 126 = L shares psi(L)
    assert biases.rows_past(100.2, 1024) == 923
    assert biases.rows_past(2000.0, 1024) == 0
    assert biases.rows_past(-3.0, 8) == 8
    assert biases.fire_toeplitz_verdict(0.0, 0, 1e-5) == "uninformative here"
    assert biases.fire_toeplitz_verdict(0.3, 0, 1e-5) == "uninformative here"
    assert biases.fire_toeplitz_verdict(1e-7, 1, 1e-5) == "held"
    assert biases.fire_toeplitz_verdict(0.2, 1, 1e-5) == "not held"
    # compared among themselves, the rows past L need two
    assert biases.fire_toeplitz_verdict(0.0, 1, 1e-5, need=2) == "uninformative here"
    assert biases.fire_toeplitz_verdict(0.2, 2, 1e-5, need=2) == "not held"


def test_fire_figure_is_uninformative_when_its_threshold_covers_the_figure():
    """A FIRE bias whose learned L is at least the figure's length is Toeplitz by construction
    on it; moved below, its rows past L are measured and break the pattern."""
    params, _ = _bias("fire", 2, 32, 32)
    enc = encodings.EncodingConfig("fire")
    positions = jnp.arange(32)
    for raw_l, informative in ((10.0, False), (-1.0, True)):  # softplus(raw) * 32 tokens
        params = {**params, "L": jnp.asarray(raw_l)}
        bias = np.asarray(encodings.bias(params, enc, 2, positions, positions, 32))
        threshold = biases.fire_threshold(params, 32)
        rows = biases.rows_past(threshold, 32)
        verdict = biases.fire_toeplitz_verdict(biases.max_relative_deviation(bias), rows, 1e-5)
        assert (verdict != "uninformative here") == informative
        if informative:
            assert verdict == "not held"


def test_ordering_to_decide_names_the_seeds_needed():
    difference = {("rope", "alibi"): (0.2, 0.15, 0.25), ("kerple", "alibi"): (0.05, -0.01, 0.11)}
    pairs = list(difference)
    one = show.ordering_to_decide(pairs, difference, 1, ("alibi", "kerple"))
    assert one.startswith("2 or more paired seeds of every encoding (ALiBi, Kerple: 1 here")
    assert "a second seed is needed" in one and "Kerple − ALiBi" in one  # the smaller one
    several = show.ordering_to_decide(pairs, difference, 3)
    # with seeds, only the difference whose interval still contains 0 is asked for
    assert "hardest" not in several and "paired seeds would detect" in several
    assert "this run has 3" in several


# ---------------------------------------------------------------- the pe_zoo chapter's functions


def _zoo_model(encoding: str, key: int = 0) -> SimpleNamespace:
    """A stand-in for a zoo.TrainedModel: an untrained tiny model (params + config)."""
    config = _tiny(encoding)
    return SimpleNamespace(params=model.init_params(jax.random.key(key), config), config=config)


TOKENS = (np.arange(600) * 7 % 32).astype(np.int32)


def test_sample_windows_cut_the_tokens_at_the_drawn_starts():
    tokens = np.arange(1000)
    one, (start,) = biases.sample_windows(tokens, 10, seed=3)
    assert one.shape == (1, 10)
    np.testing.assert_array_equal(np.asarray(one[0]), np.arange(start, start + 10))
    many, starts = biases.sample_windows(tokens, 5, seed=[3, 1], count=4)
    assert many.shape == (4, 5) and len(starts) == 4
    for row, s in zip(np.asarray(many), starts, strict=True):
        np.testing.assert_array_equal(row, np.arange(s, s + 5))
    again, _ = biases.sample_windows(tokens, 5, seed=[3, 1], count=4)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(many))  # reproducible


def test_final_layer_reads_scores_and_biases():
    window = jnp.asarray(TOKENS[:12])[None]
    rope = biases.final_layer(_zoo_model("rope"), window)
    assert rope["scores"].shape == (4, 12, 12) and rope["bias"] is None
    assert rope["all_bias"] == [None, None]
    alibi = biases.final_layer(_zoo_model("alibi"), window)
    i, j = np.tril_indices(12)
    expected = -encodings.alibi_slopes(4)[:, None] * (i - j)[None, :]
    np.testing.assert_allclose(alibi["bias"][:, i, j], expected, atol=1e-6)
    assert len(alibi["all_bias"]) == 2


def test_encoding_bias_is_the_bias_the_forward_pass_adds():
    m = _zoo_model("kerple", key=4)
    _, internals = model.forward(
        m.params, jnp.asarray(TOKENS[:12])[None], m.config, return_internals=True
    )
    for layer in range(2):
        np.testing.assert_allclose(
            biases.encoding_bias(m, layer, 12), np.asarray(internals[layer]["bias"]), atol=1e-6
        )


def test_head_grid_draws_one_pooled_panel_per_head():
    import matplotlib.pyplot as plt

    stack = np.stack([toeplitz(np.arange(40.0) * -(h + 1)) for h in range(4)])
    fig = show.head_grid(stack, "title", "bias", max_image=10)
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert len(images) == 4  # 2 x 2 panels (colour-bar axes hold no images)
    assert images[0].get_array().shape == (10, 10)  # 40 tokens pooled by 4
    assert fig._suptitle.get_text() == "title"
    plt.close(fig)


def test_colour_range_tables_pair_our_ranges_with_the_figures_ticks():
    scores = np.stack([np.array([[1.0, 9.0], [-2.0, 3.0]])] * 2)  # causal entries 1, -2, 3
    bias = -np.stack([toeplitz([0.0, 2.0])] * 2)
    final = {name: {"scores": scores, "bias": bias} for name in biases.LABELS}
    first, second = show.colour_range_tables(final)
    assert len(first) == len(second) == 12  # CABLE's 12 heads
    assert first[0] == {
        "head": 1, "RoPE ours": "[-2, 3]", "Fig. 15": "⊇ [-7.5, 7.5]",
        "ALiBi ours": "[-2, -0]", "Fig. 12": "⊇ [-300, 0]",
    }  # fmt: skip
    assert first[2]["RoPE ours"] == "—" and first[2]["Fig. 15"] == "⊇ [-15, 10]"
    assert list(second[0]) == ["head", "Kerple ours", "Fig. 10", "FIRE ours", "Fig. 13"]
    assert second[11]["Fig. 13"] == "⊇ [-7, -4]"
    assert biases.panel_range(scores[0]) == (-2.0, 3.0)


def test_alibi_fit_errors_are_zero_for_alibi_and_see_a_perturbation():
    _, bias = _bias("alibi", 4, 20, context=8)
    slope_error, bias_error, scale = biases.alibi_fit_errors([bias, bias])
    assert slope_error < 1e-6 and bias_error < 1e-5
    assert scale == pytest.approx(2**-2 * 19)
    perturbed = bias.copy()
    perturbed[1, 10, 3] += 0.5
    _, bias_error, _ = biases.alibi_fit_errors([bias, perturbed])
    assert bias_error == pytest.approx(0.5, abs=1e-5)


def test_alibi_cable_brackets_reproduce_the_closed_form_and_fit_every_bar():
    rows = biases.alibi_cable_brackets()
    assert len(rows) == 12 and all(r["fits"] == "yes" for r in rows)
    slopes = 2.0 ** (-8.0 * np.arange(1, 13) / 12)
    np.testing.assert_allclose([r["m_h"] for r in rows], slopes)
    np.testing.assert_allclose([r["511·m_h"] for r in rows], 511 * slopes)
    np.testing.assert_allclose([r["bias at r = 511"] for r in rows], 511 * slopes, rtol=1e-5)
    assert rows[0]["Fig. 12 tick (step)"] == "300 (50)" and rows[-1]["h"] == 12


def test_max_relative_deviation_takes_the_worst_head():
    a = toeplitz(np.arange(10.0))
    b = a.copy()
    b[7, 3] += 0.9  # relative spread 0.9 / 9
    assert biases.max_relative_deviation(np.stack([a, b])) == pytest.approx(0.1)
    assert biases.max_relative_deviation(np.stack([a, b]), row_stop=7) == 0.0
    assert np.isnan(biases.max_relative_deviation(np.ones((2, 1, 1))))


def test_toeplitz_survey_separates_fire_rows_below_and_above_L():
    models = {name: {0: _zoo_model(name, key=k)} for k, name in enumerate(biases.BIASED)}
    rows = biases.toeplitz_survey(models, short=16, long=64)
    assert [(r["encoding"], r["layer"]) for r in rows] == [
        (e, layer) for e in ("ALiBi", "Kerple", "FIRE") for layer in (0, 1)
    ]
    summary = biases.toeplitz_summary(rows)
    assert summary["alibi"] < 1e-6 and summary["kerple"] < 1e-6
    assert summary["fire_min_l"] == pytest.approx(16) == summary["fire_max_l"]  # initial L
    assert summary["fire_short"] < 1e-5 and summary["fire_below"] < 1e-5
    assert summary["fire_above"] > 1e-3 and summary["fire_finite"]
    plain, fire = show.toeplitz_tables(rows, seed=0, short=16, long=64)
    assert len(plain) == 4 and len(fire) == 2
    assert list(fire[0]) == [
        "layer", "L (tokens)", "spread @16", "spread @64", "i < L", "i ≥ L", "finite @64"
    ]  # fmt: skip
    assert show.toeplitz_tables(rows, seed=1, short=16, long=64) == ([], [])


def test_score_measures_are_r2_and_spread_of_the_final_scores():
    m = _zoo_model("rope", key=2)
    windows = jnp.asarray(TOKENS[:32].reshape(2, 16))
    r2, deviation = biases.score_measures(m, windows)
    assert r2.shape == deviation.shape == (2, 4)
    _, internals = model.forward(m.params, windows, m.config, return_internals=True)
    scores = np.asarray(internals[-1]["scores"])
    np.testing.assert_allclose(r2, biases.distance_r2(scores))
    assert deviation[1, 3] == pytest.approx(biases.toeplitz_deviation(scores[1, 3], relative=True))


def test_seed_interval_over_windows_or_seeds():
    (mean, lo, hi), over = biases.seed_interval([np.array([[1.0, 3.0], [3.0, 5.0]])], 0.95)
    assert over == "windows (1 seed)" and mean == 3.0  # window means 2 and 4
    assert (lo, hi) == pytest.approx((3 - 12.706 * 1.0, 3 + 12.706 * 1.0), abs=1e-3)
    (mean, lo, hi), over = biases.seed_interval([np.ones((2, 2)), 3 * np.ones((2, 2))], 0.95)
    assert over == "seeds" and mean == 2.0 and lo < 2 < hi


def test_score_summary_and_table():
    r2 = [np.array([[0.2, 0.8], [0.4, 0.6]])]
    deviation = [np.array([[0.5, 0.1], [0.3, 0.3]])]
    s = biases.score_summary(r2, deviation, 0.95)
    assert s["mean"] == pytest.approx(0.5) and s["over"] == "windows (1 seed)"
    assert s["content_share"] == 0.5  # 0.2 and 0.4 are below 0.5
    assert s["dev_mean"] == pytest.approx(0.3) and s["dev_min"] == pytest.approx(0.1)
    rows = show.score_table({"rope": s, "alibi": s}, {"alibi": np.array([1.0, 0.9999999])})
    assert rows[0]["R² (bias), min"] == "—" and rows[1]["R² (bias), min"] == "1.000000"
    assert rows[0]["R² < 0.5"] == "50%" and rows[0]["spread: mean (min)"] == "0.30 (0.10)"


def test_alibi_reach_closed_form_matches_the_measured_reach():
    slopes = encodings.alibi_slopes(8)
    profile = -slopes[:, None] * np.arange(300)
    closed = biases.alibi_reach_closed_form(8, 0.1, 300)
    np.testing.assert_array_equal(biases.bias_reach(profile, 0.1), closed)
    assert closed[0] == math.ceil(math.log(10) / 0.5) and closed[-1] == np.inf  # m_8 = 1/256


def test_non_increasing_and_reach_table():
    profiles = np.array([[0.0, -1.0, -1.0, -3.0], [0.0, -1.0, -0.5, -3.0]])
    assert biases.non_increasing(profiles).tolist() == [True, False]
    reach = {"alibi": np.array([3.0, np.inf]), "kerple": np.array([np.inf, 2.0]),
             "fire": np.array([1.0, 1.0])}  # fmt: skip
    rows = show.reach_table(reach, np.array([3.0, np.inf]), {"kerple": profiles, "fire": -profiles})
    assert rows[0] == {
        "head": 1, "ALiBi": "3", "closed form": "3", "Kerple": "∞", "FIRE": "1",
        "Kerple Δb": -3.0, "FIRE Δb": 3.0,
    }  # fmt: skip
    assert rows[1]["ALiBi"] == "∞" and rows[1]["Kerple"] == "2"


def test_bias_curves_figure_draws_every_head():
    import matplotlib.pyplot as plt

    profiles = {n: -np.outer(np.arange(1, 5), np.log1p(np.arange(50.0))) for n in biases.BIASED}
    fig = show.bias_curves_figure(profiles, context=16, threshold=0.1, title="curves")
    panels = fig.axes[:3]
    assert [ax.get_title() for ax in panels] == ["ALiBi", "Kerple", "FIRE"]
    assert all(len(ax.get_lines()) == 4 + 2 for ax in panels)  # heads + threshold + context
    np.testing.assert_allclose(panels[0].get_lines()[0].get_ydata(), profiles["alibi"][0, 1:])
    plt.close(fig)


# ---------------------------------------------------------------- length extrapolation


def test_window_losses_are_loss_by_position_per_window():
    from ropebook import evaluation

    m = _zoo_model("alibi", key=6)
    losses = biases.window_losses(m, TOKENS, length=40, n_windows=3)
    assert losses.shape == (3, 40)
    second = evaluation.loss_by_position(
        m.params, m.config, TOKENS, seq_len=40, n_windows=1, seed=1
    )
    np.testing.assert_allclose(losses[1], second)


def test_prefix_identity_gap_of_a_causal_model_is_zero():
    for name in ("rope", "fire"):
        assert biases.prefix_identity_gap(_zoo_model(name), TOKENS, 64, seed=[0, 2]) < 1e-5


def test_mean_loss_by_length_and_log_estimate():
    losses = np.array([[1.0, 3.0, 2.0, 2.0], [2.0, 2.0, 5.0, 7.0]])
    mean = biases.mean_loss_by_length(losses, [2, 4])
    np.testing.assert_allclose(mean, [[2.0, 2.0], [2.0, 4.0]])
    ppl, lo, hi, over = biases.log_estimate([mean[:, 1]], 0.95)
    assert ppl == pytest.approx(math.exp(3.0)) and over == "2 windows, 1 seed"
    assert lo == pytest.approx(math.exp(3.0 - 12.706), rel=1e-3)
    ppl, lo, hi, over = biases.log_estimate([np.array([1.0, 3.0]), np.array([4.0])], 0.95)
    assert ppl == pytest.approx(math.exp(3.0)) and over == "2 seeds"  # seed means 2 and 4


def test_perplexity_tables():
    ppl = {("rope", 0): (10.0, 9.0, 11.0, "x"), ("rope", 1): (20.0, 18.0, 22.5, "x")}
    ratio = {"rope": (2.0, 1.5, 2.25, "x")}
    by_length, growth = show.perplexity_tables(ppl, ratio, [1, 2], [64, 128])
    assert by_length == [
        {"encoding": "RoPE", "1× (64)": "10.00 [9.00, 11.00]", "2× (128)": "20.00 [18.00, 22.50]"}
    ]
    assert growth == [
        {"encoding": "RoPE", "ours 2×/1×": "2 [1.5, 2.25]", "CABLE ppl": "20.87 → 554.12",
         "CABLE 8×/1×": "26.6"}
    ]  # fmt: skip


def test_extrapolation_charts_hold_the_right_rows():
    relative = {(n, k): (1.0 + k, 1.0, 1.0 + 2 * k, "x") for n in biases.LABELS for k in range(2)}
    chart = show.relative_perplexity_chart(relative, relative, [1, 2], [16, 32], "title").to_dict()
    assert chart["title"] == "title" and chart["width"] == 520
    ours, _, cable = (chart["datasets"][layer["data"]["name"]] for layer in chart["layer"])
    assert len(ours) == 8 and len(cable) == 8
    alibi = [r["relative perplexity"] for r in cable if r["encoding"] == "ALiBi"]
    assert alibi == [1.0, pytest.approx(22.42 / 20.99)]
    curves = {"rope": np.repeat([1.0, 3.0], 64)}
    chart = show.loss_by_position_chart(curves, 16, "loss", n_bins=4).to_dict()
    rows = chart["datasets"][chart["layer"][0]["data"]["name"]]
    assert [r["loss (nats)"] for r in rows] == [1.0, 1.0, 3.0, 3.0]
    assert [r["position (tokens)"] for r in rows] == [16, 48, 80, 112]


# ---------------------------------------------------------------- orderings of Table 4


def test_ordering_checks_follow_cable_table4():
    checks = biases.ordering_checks(("rope", "alibi", "kerple", "fire"), biases.CABLE_RATIO)
    assert checks["CABLE's whole order"] == [
        ("kerple", "alibi"),
        ("fire", "kerple"),
        ("rope", "fire"),
    ]
    assert checks["ALiBi degrades least"] == [
        ("rope", "alibi"),
        ("kerple", "alibi"),
        ("fire", "alibi"),
    ]
    assert checks["RoPE degrades most"] == [("rope", "alibi"), ("rope", "kerple"), ("rope", "fire")]


def test_paired_log_ratio_difference():
    # ln-ratio per window = last column - first: worse [1, 3], better [0, 0] -> differences [1, 3]
    mean_loss = {("a", 0): np.array([[0.0, 1.0], [0.0, 3.0]]), ("b", 0): np.zeros((2, 2))}
    mean, lo, hi = biases.paired_log_ratio_difference(mean_loss, "a", "b", [0], 0.95)
    assert mean == 2.0 and (lo, hi) == pytest.approx((2 - 12.706, 2 + 12.706), abs=1e-3)
    mean_loss |= {("a", 1): np.array([[0.0, 5.0], [0.0, 5.0]]), ("b", 1): np.zeros((2, 2))}
    mean, lo, hi = biases.paired_log_ratio_difference(mean_loss, "a", "b", [0, 1], 0.95)
    assert mean == 3.5  # seed means 2 and 5


def test_order_verdict_and_weakest_difference():
    held, straddles, below = (1.0, 0.5, 1.5), (0.1, -0.1, 0.3), (-1.0, -1.5, -0.5)
    assert biases.order_verdict([held, held], n_seeds=3) == "held"
    assert biases.order_verdict([held, straddles], n_seeds=3) == "partly"
    # one neighbour established each way
    assert biases.order_verdict([held, below], n_seeds=3) == "partly"
    # the other way, none for
    assert biases.order_verdict([below, straddles], n_seeds=3) == "not held"
    # nothing established: undecided, however the point estimates rank (tau is not asked)
    assert biases.order_verdict([straddles, straddles], n_seeds=3) == "cannot decide"
    difference = {("a", "b"): held, ("c", "b"): straddles}
    assert biases.weakest_difference([("a", "b"), ("c", "b")], difference) == ("c", "b")
    rows = show.ordering_table(
        {"x": [("rope", "alibi")]}, {("rope", "alibi"): (math.log(2), 0.1, 1.2)}, {"x": "held"}
    )
    assert rows == [
        {"ordering": "x", "needs": "RoPE > ALiBi", "Δ ln ratio": "+0.693 [+0.100, +1.200]",
         "ratio": "2", "verdict": "held"}
    ]  # fmt: skip


def test_detectable_difference_grows_with_noise_and_matches_the_power_formula():
    from ropebook.stats.power import min_detectable_effect

    rng = np.random.default_rng(0)
    windows = rng.normal(size=(8, 2))
    mean_loss = {("a", 0): windows, ("b", 0): np.zeros((8, 2))}
    samples = windows[:, -1] - windows[:, 0]
    expected = min_detectable_effect(float(np.std(samples, ddof=1)), 8)
    assert biases.detectable_difference(mean_loss, [("a", "b")], [0]) == pytest.approx(expected)
    louder = {k: 3 * v for k, v in mean_loss.items()}
    assert biases.detectable_difference(louder, [("a", "b")], [0]) == pytest.approx(3 * expected)


def test_rank_rows_put_both_orders_side_by_side():
    labels = {"a": "A", "b": "B", "c": "C"}
    rows = show.rank_rows({"a": 2.0, "b": 1.5, "c": 3.0}, {"a": 1.1, "b": 1.3, "c": 1.2}, labels)
    assert [(r["rank"], r["ours"], r["CABLE"]) for r in rows] == [
        (1, "B", "A"), (2, "A", "C"), (3, "C", "B"),
    ]  # fmt: skip
    assert rows[0]["our ratio"] == 1.5 and rows[0]["CABLE ratio"] == 1.1


def test_the_cpu_book_trains_every_pe_zoo_encoding_on_replicate_seeds():
    """pe_zoo orders encodings over seeds (one seed cannot decide): at cpu each has at least 2."""
    from ropebook import zoo

    for name in zoo.PE_ZOO:
        assert len(zoo.seeds_for(name, profile="cpu")) >= biases.MIN_SEEDS, name


def test_decay_verdict_is_graded_over_every_seeds_heads_and_replicated():
    """FIRE's bias decays (held) only if every head of every run is non-increasing; a run with a
    head that turns up makes it partly; one run decides nothing (it says what one initialisation
    learnt)."""
    all_, some, none = np.ones(4, bool), np.array([1, 1, 0, 1], bool), np.zeros(4, bool)
    assert biases.decay_verdict({0: all_, 1: all_}) == "held"
    assert biases.decay_verdict({0: all_, 1: some}) == "partly"
    assert biases.decay_verdict({0: none, 1: none}) == "not held"
    assert biases.decay_verdict({0: all_}) == "cannot decide"
    assert biases.decay_verdict({}) == "not testable here"
    assert biases.replicated("held", 0) == "not testable here"


def test_final_layer_decay_reads_each_seeds_model():
    """ALiBi's bias −m_h·(i−j) never increases with distance, in every head of every model."""
    decays = biases.final_layer_decay({0: _zoo_model("alibi"), 3: _zoo_model("alibi", 1)}, 16)
    assert list(decays) == [0, 3] and all(d.shape == (4,) and d.all() for d in decays.values())
