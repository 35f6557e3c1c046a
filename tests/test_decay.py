"""Activation vs distance (Barbero et al. 2025, Sec. 3): closed forms, Prop. 3.1, Random RoPE."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropebook import rope
from ropebook.analysis import decay
from ropebook.proofs import decay as decay_proofs

DISTANCES = np.arange(0, 2048)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
@pytest.mark.parametrize("head_dim", [2, 16, 128])
def test_all_ones_matches_closed_form(pairing, head_dim):
    ones = np.ones(head_dim)
    got = decay.activation_vs_distance(ones, ones, DISTANCES, pairing=pairing)
    k = np.arange(head_dim // 2)
    closed = np.array([np.sum(2 * np.cos(r * 10_000.0 ** (-2 * k / head_dim))) for r in DISTANCES])
    np.testing.assert_allclose(got, closed, atol=1e-9)
    np.testing.assert_allclose(
        decay.expected_ones_activation(DISTANCES, head_dim), closed, atol=1e-9
    )
    assert got[0] == pytest.approx(head_dim)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_all_ones_through_apply_rope(pairing):
    """The model's float32 code path (apply_rope on a repeated all-ones sequence) agrees too."""
    t, d = 512, 128
    ones = np.ones((t, d))
    profile = decay.last_query_profile(ones, ones, np.arange(t), pairing=pairing)
    np.testing.assert_allclose(profile, decay.expected_ones_activation(np.arange(t), d), atol=1e-2)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_activation_matches_rotation_matrix(pairing):
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 32))
    distances = [0, 1, 3, 250, 4000]
    expected = [q @ rope.rotation_matrix(-r, 32, pairing=pairing) @ k for r in distances]
    got = decay.activation_vs_distance(q, k, distances, pairing=pairing)
    np.testing.assert_allclose(got, expected, atol=1e-10)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
@pytest.mark.parametrize("r", [0, 1, 7, 100, 511])
def test_prop31_peaks_exactly_at_r(pairing, r):
    rng = np.random.default_rng(r)
    for _ in range(5):
        q = rng.standard_normal(128)
        k = decay.prop31_key(q, r, pairing=pairing)
        curve = decay.activation_vs_distance(q, k, np.arange(512), pairing=pairing)
        assert int(np.argmax(curve)) == r
        assert curve[r] == pytest.approx(q @ q)  # the maximum is ||q||^2
        # and the model's float32 path, softmax over a causal row, peaks there too
        seq = np.broadcast_to(k, (512, 128))
        queries = np.broadcast_to(q, (512, 128))
        row = decay.last_query_profile(queries, seq, np.arange(512), pairing=pairing)
        assert int(np.argmax(row)) == r


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 60), extra=st.integers(0, 500), seed=st.integers(0, 2**31 - 1))
def test_random_rope_positions(n, extra, seed):
    length = n + extra
    positions = decay.random_rope_positions(np.random.default_rng(seed), n, length, size=3)
    assert positions.shape == (3, n)
    assert np.all(np.diff(positions, axis=-1) > 0)  # sorted and distinct
    assert positions.min() >= 0 and positions.max() < length


def test_random_rope_with_l_equal_n_is_plain_rope():
    positions = decay.random_rope_positions(np.random.default_rng(0), 50, 50)
    np.testing.assert_array_equal(positions, np.arange(50))
    with pytest.raises(ValueError, match="L >= n"):
        decay.random_rope_positions(np.random.default_rng(0), 50, 49)


def test_mean_activation_by_distance_against_loops():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 2, 6, 3, 4))
    got = decay.mean_activation_by_distance(q, k)
    assert got.shape == (2, 3, 6)
    for b in range(2):
        for h in range(3):
            for r in range(6):
                pairs = [q[b, i, h] @ k[b, i - r, h] for i in range(r, 6)]
                assert got[b, h, r] == pytest.approx(np.mean(pairs))


def test_summaries():
    assert decay.half_distance([1.0, 0.8, 0.6, 0.4, 0.9]) == 3
    assert decay.half_distance([1.0, 0.9]) is None
    curves = np.array([[2.0, 2.0, 1.0, 1.0]])
    assert decay.mean_square_ratio(curves, slice(0, 2), slice(2, 4)) == pytest.approx(0.25)
    low, high = decay.binomial_range(1000, 0.95)
    assert 930 < low < 950 < high < 970


def test_gaussian_samples_have_zero_mean_and_variance_d():
    samples = decay.gaussian_activation_samples(
        np.random.default_rng(0), [0, 10, 1000], head_dim=16, n_samples=4000
    )
    assert samples.shape == (4000, 3)
    assert np.all(np.abs(samples.mean(axis=0)) < 4 * np.sqrt(16 / 4000))
    np.testing.assert_allclose(samples.var(axis=0), 16, rtol=0.15)


@pytest.mark.parametrize(
    "statement",
    [
        decay_proofs.ones_closed_form,
        decay_proofs.prop31,
        decay_proofs.lemma_a1,
        decay_proofs.prop32,
    ],
)
def test_sympy_statements(statement):
    proof = statement()
    assert proof.steps and proof.name.startswith("decay.")
