"""Frequency usage: chunk norms on constructed vectors, GQA shapes, RoPE invariance, summaries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ropebook import hf, model, rope
from ropebook.analysis import frequencies as fq


def one_chunk(head_dim: int, chunk: int, pairing: str, value=(3.0, 4.0)) -> np.ndarray:
    """A vector whose only energy is in RoPE chunk ``chunk`` under ``pairing``."""
    x = np.zeros(head_dim)
    i, j = rope.chunk_indices(head_dim, pairing)[chunk]
    x[i], x[j] = value
    return x


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
@pytest.mark.parametrize("chunk", [0, 3, 7])
def test_energy_in_one_chunk_lands_in_that_chunk(pairing, chunk):
    x = np.broadcast_to(one_chunk(16, chunk, pairing), (2, 5, 3, 16))
    usage = fq.chunk_usage(x, pairing)
    expected = np.zeros((3, 8))
    expected[:, chunk] = 5.0
    np.testing.assert_allclose(usage, expected)
    # ... and the other pairing spreads it over two different chunks (unless they coincide)
    other = fq.chunk_usage(x, "half" if pairing == "interleaved" else "interleaved")
    assert np.count_nonzero(other[0]) in (1, 2)


def test_half_and_interleaved_chunks_are_the_documented_dims():
    x = np.arange(8, dtype=float)[None, None, None]
    half = fq.chunk_usage(x, "half")[0]
    interleaved = fq.chunk_usage(x, "interleaved")[0]
    np.testing.assert_allclose(half, np.hypot([0, 1, 2, 3], [4, 5, 6, 7]))
    np.testing.assert_allclose(interleaved, np.hypot([0, 2, 4, 6], [1, 3, 5, 7]))


def fake_runner(layers=2, heads=4, kv_heads=2, head_dim=8):
    """Internals where every chunk norm equals the (1-based) token position."""

    def run(tokens):
        t = tokens.shape[1]
        scale = np.arange(1, t + 1, dtype=float)[None, :, None, None] / np.sqrt(2)
        q = np.ones((1, t, heads, head_dim)) * scale
        kv = np.ones((1, t, kv_heads, head_dim)) * scale
        return [{"q": q, "k": kv, "v": 2 * kv} for _ in range(layers)]

    return run


def test_measure_shapes_under_gqa_and_equal_text_weights():
    texts = [np.zeros(3, int), np.zeros(7, int)]  # mean position 2 and 4
    usage = fq.measure(fake_runner(), texts, frequencies=rope.base_frequencies(8))
    assert usage.q.shape == (2, 4, 4) and usage.k.shape == usage.v.shape == (2, 2, 4)
    assert usage.layers("k").shape == (2, 4)
    np.testing.assert_allclose(usage.q, 3.0)  # (2 + 4) / 2: texts weigh the same
    np.testing.assert_allclose(usage.v, 6.0)
    assert (usage.n_texts, usage.n_tokens) == (2, 10)
    skipped = fq.measure(fake_runner(), texts, frequencies=np.ones(4), skip_first=1)
    np.testing.assert_allclose(skipped.q, (2.5 + 4.5) / 2)
    with pytest.raises(ValueError, match="kind"):
        usage.heads("x")


def test_gqa_checkpoint_and_rope_invariance():
    """A random GQA checkpoint built in memory: 6 query heads share 2 KV heads."""
    config = hf.HFConfig(
        family="llama", vocab_size=50, hidden_size=48, intermediate_size=64, n_layers=2,
        n_heads=6, n_kv_heads=2, head_dim=16, rope_theta=10_000.0,
    )  # fmt: skip
    keys = iter(jax.random.split(jax.random.key(0), 64))

    def w(*shape):
        return 0.2 * jax.random.normal(next(keys), shape)

    d, hd = config.hidden_size, config.head_dim
    layers = [
        {
            "attn_norm": jnp.ones(d), "mlp_norm": jnp.ones(d),
            "q": {"w": w(d, 6 * hd)}, "k": {"w": w(d, 2 * hd)}, "v": {"w": w(d, 2 * hd)},
            "o": {"w": w(6 * hd, d)}, "gate": {"w": w(d, 64)}, "up": {"w": w(d, 64)},
            "down": {"w": w(64, d)},
        }
        for _ in range(2)
    ]  # fmt: skip
    embed = w(50, d)
    params = {"embed": embed, "layers": layers, "final_norm": jnp.ones(d), "lm_head": embed}
    checkpoint = hf.HFModel(config, params, path=None)
    texts = [np.arange(20) % 50, (np.arange(33) * 7) % 50]
    usage = fq.measure_hf(checkpoint, texts)
    assert usage.q.shape == (2, 6, 8) and usage.k.shape == (2, 2, 8) and usage.v.shape == (2, 2, 8)
    np.testing.assert_allclose(usage.frequencies, rope.base_frequencies(16))
    _, internals = hf.forward(checkpoint, texts[1][None], return_internals=True)
    assert fq.rotation_invariance_error(internals) < 1e-5


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_rope_preserves_chunk_norms_in_the_book_model(pairing):
    config = model.ModelConfig(
        vocab_size=40, n_layers=2, n_heads=2, d_model=32, d_ff=64, context=64, pairing=pairing
    )
    params = model.init_params(jax.random.key(1), config)
    tokens = (np.arange(60) * 11 % 40)[None]
    _, internals = model.forward(params, tokens, config, return_internals=True)
    assert fq.rotation_invariance_error(internals, pairing) < 1e-5
    # chunk norms are NOT preserved if read with the wrong pairing: the check has teeth
    wrong = "half" if pairing == "interleaved" else "interleaved"
    assert fq.rotation_invariance_error(internals, wrong) > 1e-2
    usage = fq.measure(
        fq.zoo_runner(params, config), [tokens[0]], frequencies=fq.zoo_frequencies(config),
        pairing=pairing,
    )  # fmt: skip
    assert usage.q.shape == (2, 2, 8)


def test_band_share_and_trend_on_constructed_profiles():
    flat = np.ones(8)
    assert fq.band_share(flat, 0.25, "low") == pytest.approx(0.25)
    assert fq.band_share(flat, 0.25, "high") == pytest.approx(0.25)
    slow = np.array([0, 0, 0, 0, 0, 0, 1.0, 1.0])
    assert fq.band_share(slow, 0.25, "low") == pytest.approx(1.0)
    assert fq.band_share(slow, 0.25, "high") == pytest.approx(0.0)
    assert fq.band_size(8, 0.01) == 1
    assert fq.frequency_trend(np.arange(8.0)) == pytest.approx(1.0)
    assert fq.frequency_trend(-np.arange(8.0)) == pytest.approx(-1.0)
    assert fq.frequency_trend(flat) == pytest.approx(0.0)
    rows = np.stack([np.arange(8.0), -np.arange(8.0)])
    np.testing.assert_allclose(fq.frequency_trend(rows), [1, -1])
    with pytest.raises(ValueError, match="band"):
        fq.band_share(flat, 0.25, "middle")


def test_map_similarity():
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 2, size=(3, 8))
    same = fq.map_similarity(a, 5 * a)
    assert same["cosine"] == pytest.approx(1.0) and same["profile correlation"] == pytest.approx(1)
    reversed_ = fq.map_similarity(a, a[:, ::-1])
    assert reversed_["profile correlation"] < same["profile correlation"]
    with pytest.raises(ValueError, match="shape"):
        fq.map_similarity(a, a[:, :4])


def test_offset_attention():
    t = 6
    diagonal = np.eye(t)[None, None]
    previous = np.eye(t, k=-1)[None, None]
    previous[0, 0, 0, 0] = 1.0  # the first query can only attend to itself
    assert fq.offset_attention(diagonal, 0)[0] == pytest.approx(1.0)
    assert fq.offset_attention(diagonal, 1)[0] == pytest.approx(0.0)
    assert fq.offset_attention(previous, 1)[0] == pytest.approx(1.0)


def test_heatmap_records():
    usage = fq.measure(fake_runner(), [np.zeros(4, int)], frequencies=rope.base_frequencies(8))
    rows = fq.heatmap_records(usage, "q", per_head=True, layers=[0])
    assert len(rows) == 4 * 4 and rows[0]["wavelength (tokens)"] == pytest.approx(2 * np.pi)
    assert {r["head"] for r in rows} == {0, 1, 2, 3}
    assert len(fq.heatmap_records(usage, "v")) == 2 * 4
