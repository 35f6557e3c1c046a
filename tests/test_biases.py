"""Additive-bias encodings and the measures the pe_zoo chapter reads them with."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import toeplitz

from ropebook import encodings, model
from ropebook.analysis import biases


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
    assert biases.separation_verdict([(1.0, 0.5, 1.5), (0.2, 0.1, 0.3)]) == "held"
    assert biases.separation_verdict([(1.0, 0.5, 1.5), (0.0, -0.1, 0.1)]) == "partly"
    assert biases.separation_verdict([(1.0, 0.5, 1.5), (-0.2, -0.3, -0.1)]) == "not held"
