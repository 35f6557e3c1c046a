"""apply_rope against transformers, explicit rotation matrices and its defining properties."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropebook import rope

jax.config.update("jax_enable_x64", False)


def random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_matches_transformers_rotate_half():
    torch = pytest.importorskip("torch")
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    batch, seq, heads, dim, base = 2, 17, 3, 32, 10_000.0
    q, k = random((batch, seq, heads, dim), 0), random((batch, seq, heads, dim), 1)
    positions = np.arange(seq) + 5
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.outer(torch.tensor(positions, dtype=torch.float32), inv_freq)
    emb = torch.cat([angles, angles], dim=-1)[None]
    # transformers works on [batch, heads, seq, dim]
    q_t, k_t = (torch.tensor(x).transpose(1, 2) for x in (q, k))
    q_hf, k_hf = apply_rotary_pos_emb(q_t, k_t, emb.cos(), emb.sin())
    ours_q = rope.apply_rope(q, positions, base=base, pairing="half")
    ours_k = rope.apply_rope(k, positions, base=base, pairing="half")
    np.testing.assert_allclose(ours_q, q_hf.transpose(1, 2).numpy(), atol=2e-5)
    np.testing.assert_allclose(ours_k, k_hf.transpose(1, 2).numpy(), atol=2e-5)


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_equals_block_rotation_matrix(pairing):
    dim, positions = 16, np.array([0, 1, 7, 300])
    x = random((len(positions), 1, dim), 2)
    ours = np.asarray(rope.apply_rope(x, positions, pairing=pairing))
    expected = np.stack(
        [rope.rotation_matrix(p, dim, pairing=pairing) @ x[i, 0] for i, p in enumerate(positions)]
    )
    np.testing.assert_allclose(ours[:, 0], expected, atol=1e-5)


def test_frequencies_of_each_variant():
    dim = 16
    full = rope.base_frequencies(dim)
    np.testing.assert_allclose(full, 10_000.0 ** (-np.arange(8) / 8))
    p_rope = rope.frequencies(dim, variant="p-rope", proportion=0.75)
    np.testing.assert_array_equal(p_rope[:6], full[:6])  # fastest 6 of 8 kept
    assert (p_rope[6:] == 0).all()
    reversed_ = rope.frequencies(dim, variant="reversed", proportion=0.75)
    assert (reversed_[:2] == 0).all() and np.array_equal(reversed_[2:], full[2:])
    partial = rope.frequencies(dim, variant="partial", proportion=0.5)
    np.testing.assert_allclose(partial[:4], 10_000.0 ** (-np.arange(4) / 4))
    assert (partial[4:] == 0).all()


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_p_rope_leaves_slowest_chunks_unrotated(pairing):
    dim, p = 16, 0.25
    x = random((5, 2, dim), 3)
    rotated = np.asarray(
        rope.apply_rope(x, np.arange(5) * 13, variant="p-rope", proportion=p, pairing=pairing)
    )
    still = rope.chunk_indices(dim, pairing)[int(p * dim // 2) :].ravel()
    moved = rope.chunk_indices(dim, pairing)[: int(p * dim // 2)].ravel()
    np.testing.assert_array_equal(rotated[..., still], x[..., still])
    assert not np.allclose(rotated[1:, :, moved], x[1:, :, moved])


def test_partial_rotates_only_leading_dims():
    dim = 16
    x = random((4, 1, dim), 4)
    out = np.asarray(rope.apply_rope(x, np.arange(4) + 1, variant="partial", proportion=0.5))
    np.testing.assert_array_equal(out[..., 8:], x[..., 8:])
    expected = np.asarray(rope.apply_rope(x[..., :8], np.arange(4) + 1))
    np.testing.assert_allclose(out[..., :8], expected, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pairing": "zigzag"}, "valid pairings: half, interleaved"),
        ({"variant": "yarn"}, "valid variants"),
        ({"proportion": 1.5}, "proportion must lie in"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        rope.apply_rope(np.zeros((1, 1, 8), np.float32), np.arange(1), **kwargs)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 5000), n=st.integers(0, 5000), seed=st.integers(0, 2**16),
    pairing=st.sampled_from(rope.PAIRINGS),
    variant=st.sampled_from(rope.VARIANTS), proportion=st.sampled_from([0.25, 0.5, 0.75, 1.0]),
)  # fmt: skip
def test_relative_property_and_norms(m, n, seed, pairing, variant, proportion):
    dim = 32
    q, k = random((1, 1, dim), seed), random((1, 1, dim), seed + 1)
    kw = {"pairing": pairing, "variant": variant, "proportion": proportion}
    rq, rk = rope.apply_rope(q, np.array([m]), **kw), rope.apply_rope(k, np.array([n]), **kw)
    relative = rope.apply_rope(k, np.array([n - m]), **kw)
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    assert abs(float(np.sum(rq * rk)) - float(np.sum(q * relative))) < 1e-4 * scale
    np.testing.assert_allclose(np.linalg.norm(rq), np.linalg.norm(q), rtol=1e-5)


@pytest.mark.parametrize("head_dim, context", [(32, 128), (64, 512), (256, 8192)])
def test_matched_base_puts_the_slowest_plane_where_asked(head_dim, context):
    base = rope.matched_base(head_dim, context, 0.14)
    assert rope.turns_per_context(head_dim, base, context)[-1] == pytest.approx(0.14, rel=1e-12)
    # closed form at head_dim 4: base^(-1/2) · context / 2π = turns
    assert rope.matched_base(4, 100, 1.0) == pytest.approx((100 / (2 * np.pi)) ** 2)
