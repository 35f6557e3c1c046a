"""ropebook.hf against transformers on tiny random Llama and Gemma checkpoints (CPU, no network)."""

import json
import math

import numpy as np
import pytest

from ropebook import hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
SEQ = 24


def tiny_config(family: str, **rope):
    common = dict(
        vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rms_norm_eps=1e-6, attn_implementation="eager",
    )  # fmt: skip
    common |= rope  # rope settings may replace max_position_embeddings
    if family == "llama":
        return transformers.LlamaConfig(**common)
    # head_dim 32 != 64 / 4: Gemma's head_dim is its own field
    return transformers.GemmaConfig(**common, head_dim=32)


def save_random(family: str, path, seed: int = 0, **rope):
    """A random model saved as safetensors. Norm weights are randomised too, so a missing
    ``1 + w`` (Gemma) or a wrong norm would show; weights are scaled to keep logits O(1)."""
    torch.manual_seed(seed)
    config = tiny_config(family, **rope)
    cls = transformers.LlamaForCausalLM if family == "llama" else transformers.GemmaForCausalLM
    model = cls(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(0.3 * torch.randn_like(param) + (1.0 if family == "llama" else 0.0))
            else:
                param.copy_(0.08 * torch.randn_like(param))
    model.save_pretrained(path, safe_serialization=True)
    return model


def reference(model, tokens: np.ndarray):
    """transformers' logits and per-layer q, k (pre/post RoPE, [B, T, H, D]) via hooks."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    captured, hooks = {}, []
    for i, layer in enumerate(model.model.layers):
        for name in ("q_proj", "k_proj", "v_proj"):
            module = getattr(layer.self_attn, name)
            hooks.append(
                module.register_forward_hook(
                    lambda m, a, out, key=(i, name[0]): captured.__setitem__(key, out.detach())
                )
            )
    ids = torch.tensor(tokens)
    with torch.no_grad():
        logits = model(ids).logits.numpy()
        positions = torch.arange(ids.shape[1])[None]
        hidden = torch.zeros(1, 1, 1)
        cos, sin = model.model.rotary_emb(hidden, positions)
    for hook in hooks:
        hook.remove()
    head_dim = model.config.head_dim
    layers = []
    for i in range(len(model.model.layers)):
        q, k, v = (captured[(i, n)].view(*ids.shape, -1, head_dim) for n in "qkv")
        q_rot, k_rot = apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
        layers.append(
            {
                "q": q.numpy(), "k": k.numpy(), "v": v.numpy(),
                "q_rot": q_rot.transpose(1, 2).numpy(), "k_rot": k_rot.transpose(1, 2).numpy(),
            }
        )  # fmt: skip
    return logits, layers


def compare(path, model, seq=SEQ):
    tokens = np.random.default_rng(1).integers(0, 97, size=(2, seq))
    ours = hf.load(path)
    logits, internals = hf.forward(ours, tokens, return_internals=True)
    ref_logits, ref_layers = reference(model, tokens)
    assert np.abs(ref_logits).max() > 0.1  # not a degenerate comparison
    np.testing.assert_allclose(np.asarray(logits), ref_logits, atol=TOLERANCE, rtol=TOLERANCE)
    for mine, theirs in zip(internals, ref_layers, strict=True):
        for key in ("q", "k", "v", "q_rot", "k_rot"):
            np.testing.assert_allclose(
                np.asarray(mine[key]), theirs[key], atol=TOLERANCE, rtol=TOLERANCE, err_msg=key
            )
    return ours, internals


@pytest.mark.parametrize("family", ["llama", "gemma"])
def test_matches_transformers(family, tmp_path):
    model = save_random(family, tmp_path)
    ours, internals = compare(tmp_path, model)
    config = ours.config
    assert config.family == family
    assert (config.n_heads, config.n_kv_heads) == (4, 2)
    assert config.head_dim == (32 if family == "gemma" else 16)
    assert internals[0]["q"].shape == (2, SEQ, 4, config.head_dim)
    assert internals[0]["k"].shape == internals[0]["v"].shape == (2, SEQ, 2, config.head_dim)
    if family == "gemma":
        assert config.embed_scale == pytest.approx(8.0) and config.norm_offset == 1.0
        assert config.activation == "gelu_pytorch_tanh" and config.tie_word_embeddings


def test_a_layer_takes_its_rotation_tables_made_once(tmp_path):
    """forward() makes the cosines and sines once per call; the jitted layer computes none
    (XLA's CPU backend would recompute them per element of each rotation)."""
    save_random("llama", tmp_path)
    ours = hf.load(tmp_path)
    x = np.zeros((1, SEQ, ours.config.hidden_size), np.float32)
    cos, sin = hf.rotation_tables(np.arange(SEQ), ours.config.scaled(SEQ).frequencies)
    layer = hf._layer.lower(
        ours.params["layers"][0], x, cos, sin, np.float32(1), ours.config, False
    ).compile().as_text()  # fmt: skip
    assert " sine(" not in layer and " cosine(" not in layer and " dot(" in layer


@pytest.mark.parametrize(
    "rope_parameters",
    [
        {"rope_type": "default", "rope_theta": 500_000.0},
        {"rope_type": "linear", "factor": 4.0, "rope_theta": 10_000.0},
        {
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64, "rope_theta": 500_000.0,
        },
    ],
    ids=["theta-500k", "linear", "llama3"],
)  # fmt: skip
def test_rope_scaling_matches_transformers(rope_parameters, tmp_path):
    model = save_random("llama", tmp_path, rope_parameters=rope_parameters)
    ours, _ = compare(tmp_path, model)
    assert ours.config.rope_type == rope_parameters["rope_type"]
    expected = model.model.rotary_emb.inv_freq.numpy()
    np.testing.assert_allclose(ours.config.frequencies(), expected, rtol=1e-6)


def test_reads_pre_v5_config_fields(tmp_path):
    """Older checkpoints (e.g. Llama 3.1's own) spell RoPE as rope_theta + rope_scaling{type}."""
    save_random("llama", tmp_path)
    config_path = tmp_path / "config.json"
    raw = json.loads(config_path.read_text())
    raw.pop("rope_parameters", None)
    raw["rope_theta"] = 20_000.0
    raw["rope_scaling"] = {"type": "linear", "factor": 2.0}
    config_path.write_text(json.dumps(raw))
    config = hf.read_config(tmp_path)
    assert (config.rope_theta, config.rope_type) == (20_000.0, "linear")
    k = np.arange(config.head_dim // 2)
    np.testing.assert_allclose(config.frequencies(), 20_000.0 ** (-2 * k / 16) / 2.0)


def test_sharded_checkpoint(tmp_path):
    model = save_random("llama", tmp_path / "single")
    model.save_pretrained(tmp_path / "sharded", safe_serialization=True, max_shard_size="20KB")
    assert (tmp_path / "sharded" / hf.INDEX_FILE).exists()
    assert len(list((tmp_path / "sharded").glob("*.safetensors"))) > 1
    compare(tmp_path / "sharded", model)


@pytest.mark.parametrize("rope_type", ["proportional", "su"])
def test_unsupported_rope_type_is_named(rope_type, tmp_path):
    save_random("llama", tmp_path)
    config_path = tmp_path / "config.json"
    raw = json.loads(config_path.read_text())
    raw["rope_parameters"] = {"rope_type": rope_type, "factor": 2.0, "rope_theta": 1e4}
    config_path.write_text(json.dumps(raw))
    with pytest.raises(hf.CheckpointError, match=f"RoPE scaling type '{rope_type}'"):
        hf.load(tmp_path)


# Context-extension configs: the original context (16 tokens) is shorter than the sequences
# compared (SEQ = 24), so dynamic NTK recomputes its grid and LongRoPE uses its long factors.
SHORT = 16
LONGROPE = {
    "rope_type": "longrope", "rope_theta": 10_000.0, "factor": 4.0,
    "original_max_position_embeddings": SHORT,
    "short_factor": [1.0, 1.1, 1.2, 1.3, 1.5, 1.7, 2.0, 2.2],
    "long_factor": [1.0, 1.3, 1.9, 2.5, 3.2, 3.7, 4.0, 4.4],
}  # fmt: skip
EXTENSIONS = {
    "yarn": (
        "llama",
        {"rope_type": "yarn", "rope_theta": 10_000.0, "factor": 4.0,
         "original_max_position_embeddings": SHORT},
        4 * SHORT,
    ),
    "yarn-gemma-betas": (
        "gemma",
        {"rope_type": "yarn", "rope_theta": 500.0, "factor": 8.0, "beta_fast": 16.0,
         "beta_slow": 2.0, "original_max_position_embeddings": SHORT},
        8 * SHORT,
    ),
    "dynamic": ("llama", {"rope_type": "dynamic", "rope_theta": 10_000.0, "factor": 4.0}, SHORT),
    "longrope": ("llama", LONGROPE, 4 * SHORT),
}  # fmt: skip


@pytest.mark.parametrize("case", list(EXTENSIONS))
def test_context_extension_configs_match_transformers(case, tmp_path):
    family, rope_parameters, max_position = EXTENSIONS[case]
    model = save_random(
        family, tmp_path, rope_parameters=dict(rope_parameters),
        max_position_embeddings=max_position,
    )  # fmt: skip
    ours, _ = compare(tmp_path, model)  # SEQ > SHORT: beyond the original context
    assert ours.config.rope_type == rope_parameters["rope_type"]
    rotary = model.model.rotary_emb
    np.testing.assert_allclose(ours.config.frequencies(SEQ), rotary.inv_freq.numpy(), rtol=2e-6)
    assert ours.config.scaled(SEQ).attention_factor == pytest.approx(rotary.attention_scaling)
    if case.startswith("yarn"):
        assert rotary.attention_scaling > 1  # the factor is really exercised
    else:  # within the original context the grid is the unscaled (dynamic) / short one
        fresh = save_random(
            family, tmp_path / "short", rope_parameters=dict(rope_parameters),
            max_position_embeddings=max_position,
        )  # fmt: skip
        compare(tmp_path / "short", fresh, seq=SHORT)
        changed = ours.config.frequencies(SEQ) != ours.config.frequencies(SHORT)
        assert changed.any()


def test_yarn_mscale_attention_factor(tmp_path):
    """DeepSeek-style YaRN: m = get_mscale(s, mscale) / get_mscale(s, mscale_all_dim)."""
    rope = {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "mscale": 1.0,
            "mscale_all_dim": 0.5, "original_max_position_embeddings": SHORT}  # fmt: skip
    model = save_random("llama", tmp_path, rope_parameters=rope, max_position_embeddings=64)
    ours, _ = compare(tmp_path, model)
    expected = (0.1 * math.log(4) + 1) / (0.05 * math.log(4) + 1)
    assert ours.config.scaled().attention_factor == pytest.approx(expected)
    assert model.model.rotary_emb.attention_scaling == pytest.approx(expected)


def test_yarn_without_truncation_is_refused(tmp_path):
    save_random("llama", tmp_path)
    config_path = tmp_path / "config.json"
    raw = json.loads(config_path.read_text())
    raw["rope_parameters"] = {"rope_type": "yarn", "factor": 2.0, "truncate": False}
    config_path.write_text(json.dumps(raw))
    with pytest.raises(hf.CheckpointError, match="truncate=false"):
        hf.load(tmp_path)


def test_gpt2_config_is_refused(tmp_path):
    transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2).save_pretrained(tmp_path)
    with pytest.raises(hf.CheckpointError, match=r"'gpt2'.*absolute position"):
        hf.load(tmp_path)


def test_corrupt_and_truncated_safetensors(tmp_path):
    save_random("llama", tmp_path)
    weights = tmp_path / "model.safetensors"
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])
    with pytest.raises(hf.CheckpointError, match=r"model\.safetensors: corrupt.*truncated"):
        hf.load(tmp_path)
    weights.write_bytes(b"\x07" * 64)
    with pytest.raises(hf.CheckpointError, match=r"model\.safetensors: corrupt"):
        hf.load(tmp_path)
    weights.write_bytes(good[:5])
    with pytest.raises(hf.CheckpointError, match="no header"):
        hf.load(tmp_path)


def test_missing_pieces_are_named(tmp_path):
    with pytest.raises(hf.CheckpointError, match="folder not found"):
        hf.load(tmp_path / "nowhere")
    tmp_path.joinpath("empty").mkdir()
    with pytest.raises(hf.CheckpointError, match=r"config\.json: file not found"):
        hf.load(tmp_path / "empty")
    save_random("llama", tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{not json")
    with pytest.raises(hf.CheckpointError, match="not valid JSON"):
        hf.load(tmp_path / "m")
    save_random("llama", tmp_path / "n")
    (tmp_path / "n" / "model.safetensors").unlink()
    with pytest.raises(hf.CheckpointError, match=r"no model\.safetensors"):
        hf.load(tmp_path / "n")


def test_missing_tensor_and_wrong_shape_are_named(tmp_path):
    from safetensors.numpy import load_file, save_file

    save_random("llama", tmp_path)
    weights = tmp_path / "model.safetensors"
    tensors = load_file(weights)
    tensors.pop("model.layers.1.mlp.up_proj.weight")
    save_file(tensors, weights)
    with pytest.raises(hf.CheckpointError, match=r"lacks tensors.*layers\.1\.mlp\.up_proj"):
        hf.load(tmp_path)
    tensors["model.layers.1.mlp.up_proj.weight"] = np.zeros((3, 3), np.float32)
    save_file(tensors, weights)
    with pytest.raises(hf.CheckpointError, match=r"shape \(3, 3\).*\(96, 64\)"):
        hf.load(tmp_path)


def test_frequencies_llama3_closed_form():
    """Llama 3.1's rule: short wavelengths kept, long ones divided by the factor."""
    config = hf.HFConfig(
        family="llama", vocab_size=8, hidden_size=128, intermediate_size=8, n_layers=1,
        n_heads=1, n_kv_heads=1, head_dim=128, rope_theta=500_000.0, rope_type="llama3",
        rope_scaling=(("factor", 8.0), ("high_freq_factor", 4.0), ("low_freq_factor", 1.0),
                      ("original_max_position_embeddings", 8192.0)),
    )  # fmt: skip
    base = 500_000.0 ** (-np.arange(64) * 2 / 128)
    wavelength = 2 * math.pi / base
    got = config.frequencies()
    np.testing.assert_allclose(got[wavelength < 8192 / 4], base[wavelength < 8192 / 4])
    np.testing.assert_allclose(got[wavelength > 8192], base[wavelength > 8192] / 8)


def test_chapter_self_check_helpers(tmp_path):
    """The helpers the chapter uses to show the loader agrees with transformers."""
    hf.tiny_random_checkpoint(tmp_path, "gemma", seed=3)
    assert hf.read_config(tmp_path).head_dim == 32
    tokens = np.random.default_rng(2).integers(0, 97, size=(1, 16))
    diffs = hf.compare_with_transformers(tmp_path, tokens)
    assert set(diffs) == {"logits", "q", "k", "q_rot", "k_rot"}
    assert max(diffs.values()) < TOLERANCE
