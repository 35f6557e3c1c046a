"""Positional encodings and the transformer: the properties the chapters rely on."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ropebook import encodings, model, rope
from ropebook.encodings import EncodingConfig
from ropebook.model import ModelConfig

PROPORTIONAL = {"p-rope", "rope-partial", "rope-reversed"}


def small_config(encoding: str = "rope", **overrides) -> ModelConfig:
    settings = dict(
        vocab_size=97, n_layers=2, n_heads=4, d_model=32, d_ff=64, context=16, encoding=encoding,
        proportion=0.5 if encoding in PROPORTIONAL else 1.0,
    )  # fmt: skip
    return ModelConfig(**settings | overrides)


def tokens(batch: int, length: int, seed: int = 0) -> jnp.ndarray:
    return jnp.asarray(np.random.default_rng(seed).integers(0, 97, (batch, length)), jnp.int32)


def with_internals(config: ModelConfig, toks: jnp.ndarray, **kwargs):
    """Internals with q/k weights scaled up so that scores are O(1), not O(0.01)."""
    params = model.init_params(jax.random.key(1), config)
    for layer in params["layers"]:
        layer["qkv"] = 10 * layer["qkv"]
    return model.forward(params, toks, config, return_internals=True, **kwargs)


def test_alibi_slopes_follow_press_et_al():
    slopes = encodings.alibi_slopes(12)
    np.testing.assert_allclose(slopes, 2.0 ** (-8.0 * np.arange(1, 13) / 12))
    # the CABLE figure's range: distance 511 costs ~322 in head 1 and ~2 in head 12
    assert 321 < 511 * slopes[0] < 323 and 1.9 < 511 * slopes[-1] < 2.1


def test_alibi_bias_is_minus_slope_times_distance():
    positions = jnp.arange(10)
    bias = np.asarray(encodings.bias({}, EncodingConfig("alibi"), 8, positions, positions, 10))
    i, j = np.tril_indices(10)
    expected = -encodings.alibi_slopes(8)[:, None] * np.abs(i - j)[None]
    np.testing.assert_allclose(bias[:, i, j], expected, rtol=1e-6)


def test_kerple_bias_is_toeplitz_and_nonpositive():
    enc = EncodingConfig("kerple")
    params = encodings.init_params(jax.random.key(0), enc, 4)
    positions = jnp.arange(12)
    bias = np.asarray(encodings.bias(params, enc, 4, positions, positions, 12))
    for d in range(12):
        diagonal = np.diagonal(bias, offset=-d, axis1=1, axis2=2)
        np.testing.assert_allclose(diagonal, diagonal[:, :1].repeat(diagonal.shape[1], 1))
    assert (bias <= 0).all() and np.allclose(np.diagonal(bias, axis1=1, axis2=2), 0)


def test_fire_is_finite_far_beyond_training_length():
    enc = EncodingConfig("fire")
    params = encodings.init_params(jax.random.key(0), enc, 4)
    positions = jnp.arange(8 * 16)
    bias = np.asarray(encodings.bias(params, enc, 4, positions, positions, 16))
    assert bias.shape == (4, 128, 128) and np.isfinite(bias).all()
    # beyond L the normaliser grows with i: FIRE is not Toeplitz there, by design
    assert not np.allclose(bias[:, 100, 90], bias[:, 20, 10])


def test_unknown_encoding_lists_valid_names():
    with pytest.raises(ValueError, match="valid encodings: nope, rope, p-rope"):
        EncodingConfig("rope2")
    with pytest.raises(ValueError, match="valid encodings"):
        small_config("sinusoidal")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(proportion=1.5), r"proportion p must lie in \[0, 1\]"),
        (dict(rope_base=0.0), "base must be > 0"),
        (dict(pairing="zigzag"), "valid pairings: half, interleaved"),
        (dict(d_model=30), "not divisible by n_heads"),
        (dict(n_layers=0), "n_layers must be a positive integer"),
        (dict(dtype="float16"), "valid dtypes"),
    ],
)
def test_invalid_configs_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        small_config("rope", **kwargs)


def test_config_json_round_trip():
    config = small_config("p-rope", head_dim=6, rope_base=500_000.0)
    assert ModelConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown ModelConfig fields"):
        ModelConfig.from_dict(config.to_dict() | {"heads": 3})


@pytest.mark.parametrize("encoding", encodings.ENCODINGS)
def test_internals_shapes_masks_and_fast_path_agree(encoding):
    config = small_config(encoding)
    params = model.init_params(jax.random.key(1), config)
    toks = tokens(2, 24)  # longer than the training context of 16
    fast = model.forward(params, toks, config)
    logits, internals = model.forward(params, toks, config, return_internals=True)
    assert fast.shape == logits.shape == (2, 24, 97) and fast.dtype == jnp.float32
    np.testing.assert_allclose(fast, logits, atol=2e-5)
    assert len(internals) == config.n_layers
    for layer in internals:
        for key in ("q", "k", "q_rot", "k_rot", "v"):
            assert layer[key].shape == (2, 24, 4, 8), key
        assert layer["scores"].shape == layer["probs"].shape == (2, 4, 24, 24)
        np.testing.assert_allclose(layer["probs"].sum(-1), 1.0, atol=1e-5)
        upper = np.triu(np.ones((24, 24), bool), k=1)
        assert np.isneginf(np.asarray(layer["scores"])[..., upper]).all()
        assert (np.asarray(layer["probs"])[..., upper] == 0).all()
        if encoding in encodings.BIASED:
            assert layer["bias"].shape == (4, 24, 24)
        else:
            assert layer["bias"] is None
        if encoding not in ("nope", "alibi", "kerple", "fire"):
            assert not np.allclose(layer["q"], layer["q_rot"])
        else:
            assert layer["q_rot"] is layer["q"]


@pytest.mark.parametrize("encoding", [e for e in encodings.ENCODINGS if e != "fire"])
def test_scores_are_invariant_to_shifting_all_positions(encoding):
    """Relative encodings, inside the whole model: every layer's scores ignore a global shift."""
    config = small_config(encoding, pairing="interleaved" if encoding == "rope" else "half")
    toks = tokens(1, 12)
    _, base = with_internals(config, toks)
    _, shifted = with_internals(config, toks, positions=jnp.arange(12) + 1000)
    causal = np.tril(np.ones((12, 12), bool))
    for a, b in zip(base, shifted, strict=True):
        scores = np.asarray(a["scores"])[..., causal]
        assert scores.std() > 0.5  # the check below is not vacuous
        np.testing.assert_allclose(scores, np.asarray(b["scores"])[..., causal], atol=1e-3)


def test_intervention_identity_fields_change_nothing():
    config, toks = small_config("rope"), tokens(2, 12)
    params = model.init_params(jax.random.key(3), config)
    plain = model.forward(params, toks, config)
    own_grid = np.asarray(encodings.EncodingConfig("rope").base) ** (
        -2.0 * np.arange(config.head_dim // 2) / config.head_dim
    )
    same = model.Intervention(frequencies=own_grid, keep_chunks=np.ones(config.head_dim // 2))
    np.testing.assert_allclose(
        model.forward(params, toks, config, intervention=same), plain, atol=2e-6
    )


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_removing_every_chunk_makes_attention_uniform(pairing):
    config = small_config("rope", pairing=pairing)
    _, internals = with_internals(
        config, tokens(1, 8),
        intervention=model.Intervention(keep_chunks=np.zeros(config.head_dim // 2)),
    )  # fmt: skip
    probs = np.asarray(internals[0]["probs"][0, 0])
    expected = np.tril(np.ones((8, 8))) / np.arange(1, 9)[:, None]
    np.testing.assert_allclose(probs, expected, atol=1e-6)


def test_removing_one_chunk_removes_exactly_its_dims():
    config = small_config("rope", pairing="interleaved")
    keep = np.ones(config.head_dim // 2)
    keep[1] = 0.0  # interleaved chunk 1 = dims (2, 3)
    _, internals = with_internals(
        config, tokens(1, 6), intervention=model.Intervention(keep_chunks=keep)
    )
    _, plain = with_internals(config, tokens(1, 6))
    q, q0 = np.asarray(internals[0]["q_rot"]), np.asarray(plain[0]["q_rot"])
    assert np.all(q[..., 2:4] == 0) and np.array_equal(
        q[..., [0, 1, 4, 5, 6, 7]], q0[..., [0, 1, 4, 5, 6, 7]]
    )


def test_logit_scale_and_frequencies_act_as_stated():
    config, toks = small_config("rope"), tokens(1, 10)
    _, plain = with_internals(config, toks)
    _, hot = with_internals(config, toks, intervention=model.Intervention(logit_scale=2.0))
    finite = np.isfinite(np.asarray(plain[0]["scores"]))
    np.testing.assert_allclose(
        np.asarray(hot[0]["scores"])[finite], 2 * np.asarray(plain[0]["scores"])[finite], rtol=1e-5
    )
    # a zero grid is NoPE: scores equal those of the unrotated queries and keys
    _, still = with_internals(
        config, toks, intervention=model.Intervention(frequencies=np.zeros(config.head_dim // 2))
    )
    np.testing.assert_allclose(still[0]["q_rot"], plain[0]["q"], atol=1e-6)
    with pytest.raises(ValueError, match="full-head rotary encoding, not 'alibi'"):
        with_internals(
            small_config("alibi"), toks, intervention=model.Intervention(frequencies=np.ones(4))
        )


# ---------------------------------------------------------------- per-layer patterns


def _loss_and_grads(config: ModelConfig, seed: int = 4):
    params = model.init_params(jax.random.key(seed), config)
    value, grads = jax.value_and_grad(model.loss_fn)(params, tokens(2, 21, seed), config)
    return params, value, grads


@pytest.mark.parametrize("attention_path", ["fused", "xla"])
@pytest.mark.parametrize("encoding", ["rope", "p-rope", "nope", "alibi", "kerple"])
def test_a_uniform_pattern_is_todays_model_bit_for_bit(encoding, attention_path, monkeypatch):
    """Layers that change nothing (empty, or restating the model's encoding) give the same
    params, loss and gradients, bit for bit, in both attention paths; so does a window or chunk
    no shorter than the sequence."""
    monkeypatch.setenv("ROPEBOOK_ATTENTION", attention_path)
    today = small_config(encoding, head_dim=16, d_model=64)
    restated = model.LayerConfig(
        encoding=encoding, rope_base=today.rope_base, proportion=today.proportion
    )
    patterns = [
        (model.LayerConfig(),) * 2, (restated,) * 2,
        (model.LayerConfig(window=21), model.LayerConfig(chunk=64)),
    ]  # fmt: skip
    params, value, grads = _loss_and_grads(today)
    for layers in patterns:
        patterned = ModelConfig(**{**today.to_dict(), "layers": layers})
        assert patterned.to_dict()["layers"] and "layers" not in today.to_dict()
        got_params, got_value, got_grads = _loss_and_grads(patterned)
        for got, want in zip(jax.tree.leaves((got_params, got_value, got_grads)),
                             jax.tree.leaves((params, value, grads)), strict=True):  # fmt: skip
            np.testing.assert_array_equal(got, want)


GEMMA_LIKE = (
    model.LayerConfig(encoding="rope", rope_base=10_000.0, proportion=1.0, window=4),
    model.LayerConfig(encoding="nope", chunk=5),
    model.LayerConfig(),  # global: the model's p-RoPE, p = 0.25, θ = 10^6
)


def gemma_like() -> ModelConfig:
    return small_config("p-rope", n_layers=3, proportion=0.25, rope_base=1e6, layers=GEMMA_LIKE)


def test_each_layer_takes_its_own_encoding_and_attends_where_it_may():
    config, toks = gemma_like(), tokens(1, 13)
    _, internals = with_internals(config, toks)
    i, j = np.indices((13, 13))
    seen = [(j <= i) & (i - j < 4), (j <= i) & (i // 5 == j // 5), j <= i]
    for layer, visible in zip(internals, seen, strict=True):
        probs = np.asarray(layer["probs"])
        assert (probs[..., ~visible] == 0).all() and (probs[..., visible] > 0).all()
        np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    local, nope, top = internals
    want = rope_apply(local["q"], 10_000.0, "rope", 1.0)
    np.testing.assert_allclose(local["q_rot"], want, atol=1e-6)
    assert nope["q_rot"] is nope["q"]
    np.testing.assert_allclose(top["q_rot"], rope_apply(top["q"], 1e6, "p-rope", 0.25), atol=1e-6)
    params = model.init_params(jax.random.key(1), config)
    explicit, _ = model.forward(params, toks, config, return_internals=True)
    np.testing.assert_allclose(model.forward(params, toks, config), explicit, atol=2e-5)


def rope_apply(x, base, variant, proportion):
    return rope.apply_rope(
        x, jnp.arange(x.shape[1]), base=base, variant=variant, proportion=proportion
    )


def test_a_pattern_round_trips_and_bad_patterns_are_named():
    config = gemma_like()
    assert ModelConfig.from_dict(config.to_dict()) == config
    assert config.to_dict()["layers"][1] == {"encoding": "nope", "chunk": 5}  # only what changes
    assert [layer.encoding.name for layer in config.layer_plan] == ["rope", "nope", "p-rope"]
    assert [layer.window for layer in config.layer_plan] == [4, None, None]
    bad = [
        (dict(layers=GEMMA_LIKE[:2]), "2 entries for n_layers=3"),
        (dict(layers=(*GEMMA_LIKE[:2], {"encoding": "xpos"})), "valid encodings"),
        (dict(layers=(*GEMMA_LIKE[:2], {"window": 0})), "window must be a positive integer"),
        (dict(layers=(*GEMMA_LIKE[:2], {"proportion": 1.5})), r"p must lie in \[0, 1\]"),
        (dict(layers=(*GEMMA_LIKE[:2], {"windw": 3})), "windw"),
    ]
    for overrides, message in bad:
        with pytest.raises((ValueError, TypeError), match=message):
            ModelConfig(**{**config.to_dict(), **overrides})


def _indexed_qkv(layer, x, config):
    """The projection as first written: the fused product indexed three times."""
    b, t, _ = x.shape
    qkv = (x @ layer["qkv"]).reshape(b, t, 3, config.n_heads, config.head_dim)
    return qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]


@pytest.mark.parametrize("encoding", ["rope", "alibi"])
def test_the_steps_faster_forms_give_jaxs_own_gradients_bit_for_bit(encoding, monkeypatch):
    """The split projection and the linear layers' own gradient (written so that XLA's CPU
    backend copies less) give the loss and gradients of the plain expressions, compiled as
    training compiles them, bit for bit."""
    config = small_config(encoding, d_model=64, head_dim=16, vocab_size=97)
    params = model.init_params(jax.random.key(5), config)
    batch = tokens(4, 33, seed=5)

    def compiled():
        step = jax.jit(jax.value_and_grad(model.loss_fn), static_argnums=2)
        return jax.tree.leaves(step(params, batch, config))

    ours = compiled()
    monkeypatch.setattr(model, "linear", lambda x, w: x @ w)
    monkeypatch.setattr(model, "_project_qkv", _indexed_qkv)
    plain = compiled()
    assert len(ours) == len(plain) == 1 + len(jax.tree.leaves(params))  # the loss, each gradient
    for got, want in zip(ours, plain, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("encoding", ["rope", "p-rope", "rope-partial", "rope-reversed", "alibi"])
def test_known_positions_rotate_with_constant_tables_and_the_same_numbers(encoding):
    """Positions known while tracing (training's) make the cosines and sines the program's
    constants, not recomputed in every fused rotation (backward included), with the loss and
    gradients of positions passed in as a traced argument, bit for bit."""
    config = small_config(encoding, d_model=64, head_dim=16, vocab_size=97, context=32)
    params = model.init_params(jax.random.key(5), config)
    batch = tokens(4, 33, seed=5)

    def loss(params, batch, positions=None):
        logits = model.forward(params, batch[:, :-1], config, positions=positions)
        targets = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(targets, batch[:, 1:, None], -1))

    known = jax.jit(jax.value_and_grad(loss))
    ours = jax.tree.leaves(known(params, batch))
    traced = jax.tree.leaves(jax.jit(jax.value_and_grad(loss))(params, batch, jnp.arange(32)))
    for got, want in zip(ours, traced, strict=True):
        np.testing.assert_array_equal(got, want)
    program = known.lower(params, batch).compile().as_text()
    assert " sine(" not in program and " cosine(" not in program
    if config.encoding_config.rotates:
        assert " sine(" in jax.jit(jax.value_and_grad(loss)).lower(
            params, batch, jnp.arange(32)).compile().as_text()  # fmt: skip
