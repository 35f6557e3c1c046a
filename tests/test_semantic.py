"""Semantic channels: Lemma A.2/A.3, Thm. 6.1's swaps and the head-scoring helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropebook.analysis import semantic
from ropebook.proofs import semantic_channels as proofs

G = math.sqrt(2) / 10  # an irrational rotation: g / 2 pi is irrational
N_STAR = 23  # ceil(pi / G)


def test_proofs_hold():
    assert len(proofs.lemma_a3().steps) >= 5
    assert len(proofs.polar_score().steps) == 2


# ---------------------------------------------------------------- Lemma A.3 on random vectors


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-30, 30, allow_nan=False), min_size=2, max_size=20),
    st.integers(0, 19),
)
def test_lemma_a3_non_maximal_weight_at_most_half(values, index):
    a = np.array(values)
    i = index % a.size
    alpha = semantic.softmax(a)
    competitors = int((a >= a[i]).sum()) - 1  # other activations at least as large
    if competitors >= 1:
        assert alpha[i] <= 0.5 + 1e-12
        assert alpha[i] <= 1.0 / (competitors + 1) + 1e-12
    if alpha[i] > 0.5:
        assert a[i] == a.max() and competitors == 0


# ---------------------------------------------------------------- Lemma A.2 and the threshold


def test_dense_rotation_gaps_shrink_but_rational_ones_do_not():
    gaps = semantic.max_gaps(G, [10, 100, 1000, 10_000])
    assert np.all(np.diff(gaps) < 0) and gaps[-1] < 0.02
    rational = semantic.max_gaps(2 * np.pi * 3 / 17, [100, 1000])
    np.testing.assert_allclose(rational, 2 * np.pi / 17, rtol=1e-9)


def test_first_hit_reaches_the_target_angle():
    n = semantic.first_hit(G, np.pi, 1e-3)
    assert n is not None
    assert abs(np.mod(G * n - np.pi + np.pi, 2 * np.pi) - np.pi) < 1e-3
    assert semantic.first_hit(G, np.pi, 1e-3, n_max=n - 1) is None


@pytest.mark.parametrize("g", [1.0, 0.3, G, 0.01, 1e-3, 2.5])
def test_breaking_length_matches_closed_form(g):
    n = semantic.breaking_length(g, n_max=100_000)
    assert n == semantic.breaking_length_closed_form(g) == math.ceil(math.pi / g)
    assert semantic.in_open_semicircle(g, n - 1) and not semantic.in_open_semicircle(g, n)


# ---------------------------------------------------------------- Thm. 6.1: worst placements


def test_worst_case_alpha_matches_brute_force_over_placements():
    rng = np.random.default_rng(0)
    g, n = 0.7, 4
    for _ in range(5):
        phi_t, phi_o = rng.uniform(0, 2 * np.pi, 2)
        c_t, c_o = rng.uniform(0, 5, 2)
        worst = 1.0
        for m_t in range(n + 1):  # target at distance m_t, other tokens everywhere else
            scores = [
                (c_t * np.cos(phi_t - g * m)) if m == m_t else (c_o * np.cos(phi_o - g * m))
                for m in range(n + 1)
            ]
            worst = min(worst, semantic.softmax(np.array(scores))[m_t])
        got = semantic.worst_case_alpha(g, n, phi_t, phi_o, c_t, c_o)
        np.testing.assert_allclose(got, worst, rtol=1e-10)


def test_robust_below_threshold_and_broken_above():
    for n in (2, 5, N_STAR // 2):
        assert semantic.best_worst_case_alpha(G, n, budget=8.0)["alpha"] > 0.99
    for n in (N_STAR + 1, 2 * N_STAR, 10 * N_STAR):
        assert semantic.best_worst_case_alpha(G, n, budget=50.0)["alpha"] <= 0.5


@settings(max_examples=100, deadline=None)
@given(
    st.floats(0, 2 * np.pi),
    st.floats(0, 2 * np.pi),
    st.floats(0, 100),
    st.floats(0, 100),
    st.integers(N_STAR + 1, 400),
)
def test_no_two_dimensional_head_is_robust_beyond_the_threshold(phi_t, phi_o, c_t, c_o, n):
    """Thm. 6.1 (with g <= pi/2): past N* + 1 every head has a placement with alpha <= 1/2."""
    assert semantic.worst_case_alpha(G, n, phi_t, phi_o, c_t, c_o) <= 0.5 + 1e-12


# ---------------------------------------------------------------- Thm. 6.1: the proof's swaps


@pytest.mark.parametrize("aim", ["previous", "robust"])
def test_swaps_move_attention_off_the_target(aim):
    rng = np.random.default_rng(1)
    for _ in range(10):
        q, keys, target = semantic.semantic_head_2d(rng, 3 * N_STAR, G, aim=aim, spread=0.3)
        attack = semantic.swap_attack(G, q, keys, target)
        assert attack.alpha_before > 0.9
        assert attack.success and attack.alpha_after < 0.5
        assert 1 <= len(attack.swaps) <= 2
        # a swap permutes tokens: same multiset of keys, query key untouched
        final = np.array(keys)
        for a, b in attack.swaps:
            final[[a, b]] = final[[b, a]]
        np.testing.assert_allclose(
            semantic.rope_scores_2d(G, q, final), attack.scores_after, atol=1e-12
        )
        assert all(len(keys) - 1 not in pair for pair in attack.swaps)


def test_swaps_fail_on_the_robust_head_below_the_threshold():
    rng = np.random.default_rng(2)
    for n in (5, 10, N_STAR - 3):
        q, keys, target = semantic.semantic_head_2d(rng, n, G, aim="robust", spread=0.0)
        attack = semantic.swap_attack(G, q, keys, target)
        assert not attack.success


def test_rope_scores_2d_follow_the_polar_form():
    rng = np.random.default_rng(3)
    q, keys = rng.normal(size=2), rng.normal(size=(6, 2))
    scores = semantic.rope_scores_2d(0.4, q, keys, query_position=5)
    theta = np.arctan2(keys[:, 1], keys[:, 0]) - np.arctan2(q[1], q[0])
    expected = (
        np.linalg.norm(q) * np.linalg.norm(keys, axis=1) * np.cos(theta + 0.4 * (np.arange(6) - 5))
    )
    np.testing.assert_allclose(scores, expected, atol=1e-12)


# ---------------------------------------------------------------- scoring helpers


def _apostrophe_head(mask: np.ndarray) -> np.ndarray:
    """Rows after a class token attend to it; every other row attends to BOS (Fig. 7a)."""
    t = mask.size
    probs = np.zeros((1, 1, t, t))
    probs[0, 0, 0, 0] = 1.0
    for i in range(1, t):
        probs[0, 0, i, i - 1 if mask[i - 1] else 0] = 1.0
    return probs


def test_previous_class_lift_on_constructed_heads():
    mask = np.zeros(12, bool)
    mask[[3, 7, 8]] = True
    apostrophe = _apostrophe_head(mask)
    previous = np.eye(12, k=-1)[None, None].copy()
    previous[0, 0, 0, 0] = 1.0
    probs = np.concatenate([apostrophe, previous], axis=1)  # two heads
    on, off, counts = semantic.previous_class_attention(probs, mask[None])
    assert counts.tolist() == [3, 8]
    lift = on / counts[0] - off / counts[1]
    np.testing.assert_allclose(lift, [1.0 - 1 / 8, 0.0])  # row 1 attends to BOS = its i-1
    by_distance = semantic.class_attention_by_distance(probs, mask[None], 4)
    np.testing.assert_allclose(semantic.distance_lift(by_distance)[1], 0.0, atol=1e-12)
    assert semantic.distance_lift(by_distance)[0] > 0.05
    rows_on, _, rows_counts = semantic.previous_class_attention(probs, mask[None], slice(8, 12))
    assert rows_counts.tolist() == [2, 2] and rows_on.tolist() == [2.0, 2.0]


def test_position_explained_separates_positional_from_content_scores():
    rng = np.random.default_rng(4)
    t = 16
    i, j = np.meshgrid(np.arange(t), np.arange(t), indexing="ij")
    by_distance = np.cos(0.5 * (i - j))  # depends on i - j only
    by_content = np.broadcast_to(rng.normal(size=t) * 3, (t, t))  # depends on the key only
    scores = np.stack([by_distance, by_content])[None]
    scores = np.where(j <= i, scores, -np.inf)
    r2 = semantic.position_explained(scores)
    assert r2[0] == pytest.approx(1.0)
    assert r2[1] < 0.5


def test_sink_chunk_contributions_add_up_to_the_scores():
    rng = np.random.default_rng(5)
    q, k = rng.normal(size=(2, 7, 3, 8)), rng.normal(size=(2, 7, 3, 8))
    bos, rest = semantic.sink_chunk_contributions(q, k)
    scores = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(8)
    np.testing.assert_allclose(bos.sum(-1), scores[:, :, 1:, 0].transpose(0, 2, 1), atol=1e-12)
    for i in range(1, 7):
        mean_other = scores[:, :, i, 1 : i + 1].mean(-1)  # [B, H]
        np.testing.assert_allclose(rest[:, i - 1].sum(-1), mean_other, atol=1e-12)


def test_bos_mass_by_position_and_class_ids():
    t = 8
    probs = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]
    masses = semantic.bos_mass_by_position(probs[None, None], bucket=4)
    np.testing.assert_allclose(
        masses[0], [np.mean([1 / 2, 1 / 3, 1 / 4]), np.mean(1 / np.arange(5, 9))]
    )
    vocab = {0: "<bos>", 1: "'s", 2: "the", 3: "o’er", 4: "'"}
    ids = semantic.class_token_ids(lambda ids: vocab[ids[0]], 5)
    assert ids.tolist() == [1, 3, 4]


def test_bos_windows_start_with_bos_and_copy_text():
    docs = [np.arange(10, 40), np.arange(100, 105)]
    windows = semantic.bos_windows(docs, 8, 5, np.random.default_rng(0))
    assert windows.shape == (5, 8) and np.all(windows[:, 0] == 0)
    for w in windows:
        assert np.all(np.diff(w[1:]) == 1) and w[1] >= 10  # consecutive, from the long document


def test_worst_case_alpha_with_one_key_is_one():
    assert semantic.worst_case_alpha(0.3, 0, 0.0, 1.0, 2.0, 2.0) == 1.0


def test_best_move_matches_brute_force():
    rng = np.random.default_rng(6)
    for _ in range(5):
        q, keys = rng.normal(size=2), rng.normal(size=(30, 2))
        exclude = {int(rng.integers(29))}
        k, k2, best = semantic._best_move(0.37, q, keys, 29, exclude)
        brute = max(
            (semantic.rope_scores_2d(0.37, q, np.repeat(keys[a][None], 30, 0))[b], a, b)
            for a in range(29)
            for b in range(29)
            if a != b and a not in exclude and b not in exclude
        )
        assert best == pytest.approx(brute[0]) and (k, k2) == brute[1:]


def test_rotated_chunk_terms_match_rope():
    import jax.numpy as jnp

    from ropebook import rope

    rng = np.random.default_rng(7)
    q, k = rng.normal(size=8), rng.normal(size=8)
    positions = np.array([0, 3, 50])
    terms = semantic.rotated_chunk_terms(q, k, rope.frequencies(8), positions)
    for row, i in zip(terms, positions, strict=True):
        q_rot = np.asarray(rope.apply_rope(jnp.asarray(q[None, None]), jnp.array([i])), np.float64)
        k_rot = np.asarray(rope.apply_rope(jnp.asarray(k[None, None]), jnp.array([0])), np.float64)
        bos, _ = semantic.sink_chunk_contributions(
            np.concatenate([k_rot, q_rot])[None], np.concatenate([k_rot, k_rot])[None]
        )
        np.testing.assert_allclose(row, bos[0, 0, 0], atol=1e-5)
