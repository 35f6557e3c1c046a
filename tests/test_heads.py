"""Positional heads: the Def. 5.1 detector, the Thm. 5.3 construction and the Prop. 5.2 bound."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ropebook import rope
from ropebook.analysis import heads
from ropebook.proofs import positional_heads as proofs

HEAD_DIM = 16
GRID = rope.frequencies(HEAD_DIM)
FASTEST = np.eye(HEAD_DIM // 2)[0]  # psi on the fastest plane only (the paper's d = 2 proof)
SPREAD = np.ones(HEAD_DIM // 2)  # psi spread evenly over every plane


def causal_uniform(t: int) -> np.ndarray:
    mask = np.tril(np.ones((t, t)))
    return mask / mask.sum(-1, keepdims=True)


def shifted(t: int) -> np.ndarray:
    """All attention on key i-1 (row 0 has only key 0)."""
    a = np.zeros((t, t))
    a[0, 0] = 1
    a[np.arange(1, t), np.arange(t - 1)] = 1
    return a


# ---------------------------------------------------------------- detector (Def. 5.1)


def test_identity_is_diagonal():
    a = np.eye(12)
    assert heads.is_positional(a, "diagonal", 1e-9)
    assert not heads.is_positional(a, "previous", 0.5)
    assert heads.epsilon_achieved(a, "diagonal") == 0.0
    assert heads.positional_score(a, "diagonal") == 1.0
    assert heads.classify(a, 0.1) == "diagonal"


def test_subdiagonal_is_previous_token():
    a = shifted(12)
    assert heads.is_positional(a, "previous", 1e-9)
    assert not heads.is_positional(a, "diagonal", 0.5)
    assert heads.positional_score(a, "diagonal") == 0.0
    assert heads.classify(a, 0.1) == "previous"


def test_uniform_is_neither():
    a = causal_uniform(12)
    assert heads.classify(a, 0.5) == "neither"
    # Row 1 puts 1/2 on each key: the best eps either kind reaches is exactly 1/2 (row 1).
    assert heads.epsilon_achieved(a, "diagonal") == pytest.approx(1 - 1 / 12)
    assert heads.epsilon_achieved(a, "previous") == pytest.approx(1 - 1 / 12)
    rows = np.arange(2, 13)
    assert heads.positional_score(a, "diagonal") == pytest.approx(np.mean(1 / rows))


def test_detector_batches_and_size():
    a = np.stack([np.eye(8), causal_uniform(8)])
    assert not heads.is_positional(a, "diagonal", 0.1)  # every matrix must pass
    assert heads.is_positional(a[:1], "diagonal", 0.1)
    # Over size N = 2 the uniform matrix has alpha_{1,1} = 1/2: diagonal for eps > 1/2 only.
    assert heads.epsilon_achieved(causal_uniform(8), "diagonal", n=2) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="valid kinds"):
        heads.target_weights(a, "next")
    with pytest.raises(ValueError, match="T, T"):
        heads.target_weights(np.ones((3, 4)), "diagonal")


def test_repeat_counts():
    tokens = np.array([0, 5, 5, 7, 5])
    assert heads.repeat_counts(tokens, "diagonal").tolist() == [1, 2, 1, 3]
    assert heads.repeat_counts(tokens, "previous").tolist() == [1, 2, 2, 1]


# ---------------------------------------------------------------- construction (Thm. 5.3)


@pytest.mark.parametrize("kind", heads.KINDS)
@pytest.mark.parametrize("weights", [FASTEST, SPREAD], ids=["fastest", "spread"])
@pytest.mark.parametrize("eps", [0.1, 1e-3])
def test_closed_form_threshold_reaches_epsilon(kind, weights, eps):
    n = 24
    s_star = heads.threshold_norm(eps, n, kind, GRID, weights)
    # The closed form is sufficient: at s* the exact construction is within eps ...
    assert heads.construction_epsilon(s_star, n, kind, GRID, weights) <= eps
    # ... and the exact threshold lies below it and is tight.
    exact = heads.exact_threshold_norm(eps, n, kind, GRID, weights)
    assert exact <= s_star * (1 + 1e-6)
    assert heads.construction_epsilon(exact * 0.98, n, kind, GRID, weights) > eps
    # The same through the models' apply_rope (float32), with psi of squared norm s*.
    psi = heads.plane_vector(HEAD_DIM, weights / weights.sum() * s_star)
    assert np.dot(psi, psi) == pytest.approx(s_star)
    attention = heads.construction_attention(kind, psi, n)
    assert heads.is_positional(attention, kind, eps * 1.01)
    assert heads.classify(attention, min(eps * 1.01, 0.5)) == kind


def test_threshold_closed_form_single_plane():
    # One plane at g = 1, N = 3: wrong offsets 1, 2; delta = 1 - cos(1).
    eps = 0.05
    expected = np.log(2 * (1 - eps) / eps) / (1 - np.cos(1.0))
    assert heads.threshold_norm(eps, 3, "diagonal", GRID, FASTEST) == pytest.approx(expected)
    assert heads.margin("diagonal", 3, GRID, FASTEST) == pytest.approx(1 - np.cos(1.0))


def test_epsilon_falls_with_norm_and_rises_with_n():
    norms = np.array([1.0, 10.0, 100.0])
    eps = heads.construction_epsilon(norms, 16, "diagonal", GRID, SPREAD)
    assert np.all(np.diff(eps) < 0)
    small, large = (heads.construction_epsilon(50.0, n, "diagonal", GRID, FASTEST) for n in (8, 64))
    assert large > small


def test_construction_targets_are_cauchy_schwarz_tight():
    psi = heads.plane_vector(HEAD_DIM, SPREAD)
    for kind, offset in heads.OFFSET.items():
        q, k = (x.astype(np.float32) for x in heads.construction(kind, psi, 6))
        positions = np.arange(6)
        q_rot = np.asarray(rope.apply_rope(q, positions))[:, 0]
        k_rot = np.asarray(rope.apply_rope(k, positions))[:, 0]
        i = np.arange(offset, 6)
        target = np.einsum("id,id->i", q_rot[i], k_rot[i - offset])
        assert np.allclose(target, psi @ psi, atol=1e-5)  # = ||q|| ||k||: the maximum


# ---------------------------------------------------------------- NoPE bound (Prop. 5.2)


def test_prop52_bound_on_random_nope_activations():
    rng = np.random.default_rng(0)
    vocab, d, t = 5, 8, 12
    tokens = np.concatenate([np.zeros((200, 1), int), rng.integers(1, vocab + 1, (200, t - 1))], 1)
    for seed in range(5):
        params = {
            "q": rng.standard_normal((vocab + 1, d)),
            "k": rng.standard_normal((vocab + 1, d)),
        }
        attention = heads.isolated_attention(params, tokens, "nope")
        for kind in heads.KINDS:
            w = heads.target_weights(attention, kind)
            r = heads.repeat_counts(tokens, kind)
            assert np.all(w <= 1 / r + 1e-12), (seed, kind)
        probes = np.array([[0, x, x] for x in range(1, vocab + 1)])
        a = heads.isolated_attention(params, probes, "nope")
        assert np.all(a[:, 2, 2] < 0.5) and np.allclose(a[:, 2, 2], a[:, 2, 1])
        a31 = params["q"][1:] @ params["k"][0]  # query of x against the BOS key
        a33 = np.einsum("xd,xd->x", params["q"][1:], params["k"][1:])  # against its own key
        expected = 1 / (np.exp(a31 - a33) + 2)
        assert np.allclose(a[:, 2, 2], expected, rtol=1e-4)


def test_isolated_fit_nope_stays_below_half_rope_succeeds():
    kw = dict(vocab=6, head_dim=8, seq_len=10, steps=150, batch_size=32, n_eval=128)
    nope = heads.fit_isolated_head("previous", "nope", **kw)
    rope_fit = heads.fit_isolated_head("previous", "rope", **kw)
    assert nope.bos_x_x < 0.5 and nope.repeat_excess <= 0
    assert rope_fit.bos_x_x > 0.9 and rope_fit.mean_target > 0.9
    assert rope_fit.losses[-1] < nope.losses[-1]


# ---------------------------------------------------------------- a tiny model end to end


def test_scan_model_on_random_model():
    from ropebook import model

    config = model.ModelConfig(
        vocab_size=32, n_layers=2, n_heads=2, d_model=16, d_ff=32, context=16, encoding="nope"
    )
    params = model.init_params(jax.random.key(0), config)
    windows = np.random.default_rng(0).integers(0, 32, (4, 16))
    scan = heads.scan_model(params, config, windows, batch_size=3)
    assert scan.shape == (2, 2)
    for kind in heads.KINDS:
        assert np.all((scan.score[kind] >= 0) & (scan.score[kind] <= 1))
        assert np.all(np.abs(scan.cosine[kind]) <= 1 + 1e-6)
        # Layer 0 of a NoPE model sees tokens only: Prop. 5.2's 1/r bound holds exactly.
        assert np.all(scan.repeat_excess[kind][0] <= 1e-5)
    assert scan.q_norms.shape == (2, 2, config.head_dim // 2)
    # The running sums agree with a direct computation on all windows at once.
    _, internals = model.forward(params, windows, config, return_internals=True)
    for layer, info in enumerate(internals):
        for kind in heads.KINDS:
            w = heads.target_weights(np.asarray(info["probs"]), kind)  # [B, H, T-1]
            assert np.allclose(scan.score[kind][layer], w.mean(axis=(0, 2)), atol=1e-6)
            assert np.allclose(scan.epsilon[kind][layer], 1 - w.min(axis=(0, 2)), atol=1e-6)
    logits, internals = model.forward(params, windows[:1], config, return_internals=True)
    table = heads.activation_table(internals[0], head=1, n_tokens=5)
    assert len(table) == 5
    for row in table[1:]:
        assert abs(row["diagonal a_ii"]) <= row["bound ‖q_i‖‖k_i‖/√d"] + 1e-5
        assert abs(row["previous a_i,i-1"]) <= row["bound ‖q_i‖‖k_i-1‖/√d"] + 1e-5


def test_fast_share():
    q = np.array([[4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    assert heads.fast_share(np.ones(8), np.ones(8)) == pytest.approx(0.25)
    assert heads.fast_share(q, np.ones(8))[0] == pytest.approx(5 / 11)


# ---------------------------------------------------------------- sympy statements


@pytest.mark.parametrize("statement", [proofs.nope_cannot, proofs.rope_can, proofs.threshold])
def test_statements_prove(statement):
    proof = statement()
    assert proof.steps
