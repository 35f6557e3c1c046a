"""ropebook.capture against transformers' eager forward, on a tiny random checkpoint of every family
(CPU, no network): queries/keys before and after RoPE, values, attention probabilities and logits
within 1e-5, and each layer's recorded grid equal to its rotary module's ``inv_freq``."""

import json
import sys

import numpy as np
import pytest

from ropebook import capture, hf, preflight, tiny_models
from ropebook.analysis import frequencies as fq

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
SEQ = 24
build = tiny_models.tiny_random_model


def reference(model, tokens):
    """transformers' own eager forward, read by wrapping its modeling file's rotation function
    (``apply_rotary_pos_emb``, or Llama 4's ``apply_rotary_emb``) and ``eager_attention_forward``:
    per layer q, k before RoPE (what the rotation received), q, k after RoPE and v (what
    attention received) and the attention weights it returns, all ``[B, T, H, D]``. A layer
    that never calls the rotation (NoPE) has q = q_rot. Llama 4's L2 norm follows its rotation
    and commutes with it, so its pre-RoPE reference is that norm of the rotation's input."""
    module = sys.modules[type(model).__module__]
    name = "apply_rotary_emb" if hasattr(module, "apply_rotary_emb") else "apply_rotary_pos_emb"
    rotary, attend = getattr(module, name), module.eager_attention_forward
    layers, pending = [], {}

    def rotary_spy(*args, **kwargs):
        out = rotary(*args, **kwargs)
        if isinstance(out, tuple):  # (q, k, cos, sin) [B, H, T, D], or Llama 4's [B, T, H, D]
            q, k = args[:2]
            layout = (lambda x: x.transpose(1, 2)) if name == "apply_rotary_emb" else (lambda x: x)
            pending.update(q=layout(q), k=layout(k))
        else:  # Gemma 4: one tensor [B, T, H, D] a call, queries first
            pending.setdefault("k" if "q" in pending else "q", args[0].transpose(1, 2))
        return out

    def attend_spy(mod, query, key, value, *args, **kwargs):
        out, weights = attend(mod, query, key, value, *args, **kwargs)
        q, k = pending.pop("q", query), pending.pop("k", key)
        if hasattr(mod, "qk_norm"):
            q, k = mod.qk_norm(q), mod.qk_norm(k)
        layers.append({"q": q, "k": k, "q_rot": query, "k_rot": key, "v": value, "probs": weights})
        return out, weights

    model.set_attn_implementation("eager")
    setattr(module, name, rotary_spy)
    module.eager_attention_forward = attend_spy
    try:
        with torch.no_grad():
            logits = model(input_ids=torch.as_tensor(tokens)).logits.numpy()
    finally:
        setattr(module, name, rotary)
        module.eager_attention_forward = attend
    as_numpy = {k: lambda x: x.transpose(1, 2).numpy() for k in ("q", "k", "q_rot", "k_rot", "v")}
    as_numpy["probs"] = lambda x: x.numpy()
    return logits, [{k: as_numpy[k](x) for k, x in layer.items()} for layer in layers]


def rotary_modules(model) -> dict[str, np.ndarray]:
    return {n: b.double().numpy() for n, b in model.named_buffers() if n.endswith("inv_freq")}


def assert_matches(model, tokens) -> dict[str, float]:
    """Capture and reference agree within TOLERANCE; returns the largest gap per quantity."""
    ours = capture.capture(model, tokens)
    logits, layers = reference(model, tokens)
    assert np.abs(logits).max() > 0.05  # not a degenerate comparison
    gaps = {"logits": float(np.abs(ours.logits - logits).max())}
    assert len(ours.layers) == len(layers) == preflight.text_config(model.config).num_hidden_layers
    for mine, theirs in zip(ours.layers, layers, strict=True):
        assert set(mine) == set(theirs)
        for key, value in theirs.items():
            assert mine[key].shape == value.shape, key
            gaps[key] = max(gaps.get(key, 0.0), float(np.abs(mine[key] - value).max()))
    assert max(gaps.values()) < TOLERANCE, gaps
    return gaps


FAMILIES = list(capture.FAMILIES)


# per family: (pairing, per layer (scope, encoding, window, chunk)) as its config sets them up
LAYOUTS = {
    "mistral": ("half", [("local", "RoPE", 8, None)] * 2),
    "gemma2": ("half", [("local", "RoPE", 8, None), ("global", "RoPE", None, None)]),
    "gemma3_text": ("half", [("local", "RoPE", 8, None), ("global", "RoPE", None, None)]),
    "gemma4_text": ("half", [("local", "RoPE", 8, None), ("global", "p-RoPE", None, None)]),
    "llama4_text": ("interleaved", [("local", "RoPE", None, 8), ("global", "NoPE", None, None)]),
    "cohere2": ("interleaved", [("local", "RoPE", 8, None), ("global", "NoPE", None, None)]),
    "gpt_neox": ("half", [("global", "partial rotary", None, None)] * 2),
}
PLAIN = ("half", [("global", "RoPE", None, None)] * 2)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_matches_eager_forward(family):
    model = build(family)
    tokens = np.random.default_rng(1).integers(0, 97, size=(2, SEQ))
    assert_matches(model, tokens)
    grids = capture.capture(model, tokens[:1], probs=False).grids
    buffers = rotary_modules(model)
    config = model.config
    pairing, layout = LAYOUTS.get(family, PLAIN)
    found = [(g.scope, g.encoding, g.window, g.chunk) for g in grids]
    assert found == layout and {g.pairing for g in grids} == {pairing}
    for index, grid in enumerate(grids):
        assert grid.frequencies.shape == (grid.head_dim // 2,)
        assert grid.attention_scaling == pytest.approx(1.0)
        if grid.encoding == "NoPE":
            assert grid.rotary_dim == 0 and not grid.rotated.any() and grid.rope_theta is None
            continue
        assert grid.source in buffers
        np.testing.assert_array_equal(grid.inv_freq, buffers[grid.source])
        if family.startswith("gemma3") or family.startswith("gemma4"):  # per-layer bases
            kind = config.layer_types[index]
            assert grid.layer_type == kind and grid.source.endswith(f"{kind}_inv_freq")
            assert grid.rope_theta == config.rope_parameters[kind]["rope_theta"]
    if family == "gemma3_text":
        assert grids[0].rope_theta == 10_000.0 and grids[1].rope_theta == 1_000_000.0
        assert not np.allclose(grids[0].inv_freq, grids[1].inv_freq)
    if family == "gpt_neox":  # Pythia's partial rotary: 25 % of 16 dims
        assert (grids[0].head_dim, grids[0].rotary_dim) == (16, 4) and grids[0].partial
        assert np.count_nonzero(grids[0].frequencies) == 2


def test_gemma4_global_layers_rotate_a_quarter_of_their_planes():
    """Gemma 4's proportional grid: the global layer's head is 32 wide; its 16 planes take the
    frequencies θ^(-2k/32) of the whole head, the fastest 4 (p = 0.25) rotate, the 12 others are
    unrotated — and the captured keys show it: those planes are the same before and after."""
    model = build("gemma4_text")
    tokens = np.random.default_rng(4).integers(0, 97, size=(1, SEQ))
    found = capture.capture(model, tokens)
    local, full = found.grids
    assert (local.head_dim, full.head_dim) == (16, 32)
    assert (local.n_rotated, full.n_rotated) == (8, 4)
    k = np.arange(16)
    np.testing.assert_allclose(full.frequencies[:4], 1e6 ** (-2 * k[:4] / 32), rtol=1e-6)
    assert not full.frequencies[4:].any()
    pairs = full.pairs[~full.rotated]
    for name in ("q", "k"):
        before, after = found.layers[1][name], found.layers[1][f"{name}_rot"]
        np.testing.assert_allclose(before[..., pairs], after[..., pairs], atol=1e-6)
        assert np.abs(before[..., full.pairs[1:4]] - after[..., full.pairs[1:4]]).max() > 1e-2
    assert "planes 4–15 unrotated" in full.describe() and "p = 0.25" in full.describe()


@pytest.mark.parametrize("family", ["cohere2", "llama4_text"])
def test_interleaved_pairing_is_read_from_the_model(family):
    """Cohere 2 and Llama 4 pair dims (2k, 2k + 1): the pairing read from their cos/sin, applied
    by :func:`capture.rotate` to the captured pre-RoPE queries, gives the model's own rotation's
    output; the half pairing does not."""
    model = build(family)
    tokens = np.random.default_rng(5).integers(0, 97, size=(1, SEQ))
    module = sys.modules[type(model).__module__]
    name = "apply_rotary_emb" if hasattr(module, "apply_rotary_emb") else "apply_rotary_pos_emb"
    seen, function = [], getattr(module, name)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(
        module, name, lambda *a, **kw: seen.append((a, function(*a, **kw))) or seen[-1][1]
    )
    try:
        with torch.no_grad():
            model(input_ids=torch.as_tensor(tokens))
    finally:
        monkey.undo()
    assert len(seen) == 1  # the NoPE layer never calls it
    args, (q_rot, _) = seen[0]
    q = args[0] if name == "apply_rotary_pos_emb" else args[0].transpose(1, 2)
    q_rot = q_rot if name == "apply_rotary_pos_emb" else q_rot.transpose(1, 2)
    rotary = model.model.rotary_emb(q, torch.arange(SEQ)[None])
    cos, sin = capture._as_cos_sin(rotary)
    assert capture.pairing_of(cos, sin) == "interleaved"
    np.testing.assert_allclose(capture.rotate(q, cos, sin, "interleaved"), q_rot, atol=1e-6)
    assert np.abs(capture.rotate(q, cos, sin, "half") - q_rot).max() > 1e-2
    np.testing.assert_allclose(capture.unrotate(q_rot, cos, sin, "interleaved"), q, atol=1e-5)


def test_partial_rotary_pass_through_dims_are_untouched():
    model = build("gpt_neox")
    tokens = np.random.default_rng(2).integers(0, 97, size=(1, SEQ))
    layer = capture.capture(model, tokens).layers[0]
    grid = capture.capture(model, tokens).grids[0]
    r = grid.rotary_dim
    np.testing.assert_array_equal(layer["q"][..., r:], layer["q_rot"][..., r:])
    assert np.abs(layer["q"][..., :r] - layer["q_rot"][..., :r]).max() > 1e-3
    pairs = grid.pairs
    assert sorted(pairs.ravel().tolist()) == list(range(grid.head_dim))
    assert pairs[0].tolist() == [0, r // 2] and pairs[r // 2].tolist() == [r, r + (16 - r) // 2]


@pytest.mark.parametrize(
    "rope_parameters",
    [
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 64, "rope_theta": 500_000.0},
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
         "rope_theta": 10_000.0},
        {"rope_type": "linear", "factor": 2.0, "rope_theta": 10_000.0},
        {"rope_type": "default", "rope_theta": 10_000.0, "partial_rotary_factor": 0.5},
    ],
    ids=["llama3", "yarn", "linear", "phi3-partial"],
)  # fmt: skip
def test_scaled_grids(rope_parameters):
    """Scaling types: the grid is the scaled inv_freq; YaRN's cos/sin factor is recorded and
    undone when recovering pre-RoPE queries."""
    family = "phi3" if "partial_rotary_factor" in rope_parameters else "llama"
    model = build(family, rope_parameters=rope_parameters)
    tokens = np.random.default_rng(3).integers(0, 97, size=(1, SEQ))
    assert_matches(model, tokens)
    grid = capture.capture(model, tokens, probs=False).grids[0]
    np.testing.assert_array_equal(grid.inv_freq, model.model.rotary_emb.inv_freq.double().numpy())
    assert grid.rope_type == rope_parameters["rope_type"]
    if rope_parameters["rope_type"] == "yarn":
        assert grid.attention_scaling == pytest.approx(0.1 * np.log(4.0) + 1.0, rel=1e-6)
    if family == "phi3":
        assert grid.rotary_dim == 8 and grid.head_dim == 16


@pytest.mark.parametrize("family", ["llama", "gemma"])
def test_agrees_with_the_jax_reader(family, tmp_path):
    """ropebook.hf (JAX) and ropebook.capture (transformers) read the same checkpoint alike."""
    hf.tiny_random_checkpoint(tmp_path, family, seed=4)
    tokens = np.random.default_rng(5).integers(0, 97, size=(1, SEQ))
    jax_logits, jax_layers = hf.forward(
        hf.load(tmp_path), tokens, return_internals=True, return_probs=True
    )
    ours = capture.capture(capture.load(tmp_path), tokens)
    np.testing.assert_allclose(ours.logits, np.asarray(jax_logits), atol=TOLERANCE)
    for mine, theirs in zip(ours.layers, jax_layers, strict=True):
        for key in ("q", "k", "v", "q_rot", "k_rot", "probs"):
            np.testing.assert_allclose(mine[key], np.asarray(theirs[key]), atol=TOLERANCE)
    np.testing.assert_allclose(ours.grids[0].frequencies, hf.read_config(tmp_path).frequencies())


def test_load_bfloat16_and_checks(tmp_path):
    model = build("qwen3")
    model.save_pretrained(tmp_path / "q", safe_serialization=True)
    info = preflight.check(tmp_path / "q")
    assert info.model_type == "qwen3" and info.n_tensors > 10
    loaded = capture.load(tmp_path / "q", dtype="bfloat16")
    assert next(loaded.parameters()).dtype == torch.bfloat16
    tokens = np.random.default_rng(6).integers(0, 97, size=(1, SEQ))
    low = capture.capture(loaded, tokens)
    high = capture.capture(model, tokens)
    assert low.grids[0].source == high.grids[0].source
    gap = np.abs(low.layers[1]["q"] - high.layers[1]["q"]).max()
    assert 0 < gap < 0.05 * np.abs(high.layers[1]["q"]).max()


def test_check_errors_name_the_file(tmp_path):
    with pytest.raises(hf.CheckpointError, match="folder not found"):
        preflight.check(tmp_path / "nowhere")
    transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2).save_pretrained(tmp_path / "gpt2")
    with pytest.raises(hf.CheckpointError, match=r"gpt2/config\.json: .*'gpt2'.*absolute"):
        preflight.check(tmp_path / "gpt2")
    build("llama").save_pretrained(tmp_path / "cut", safe_serialization=True)
    weights = tmp_path / "cut" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(hf.CheckpointError, match=r"cut/model\.safetensors: corrupt.*truncated"):
        preflight.check(tmp_path / "cut")
    raw = json.loads((tmp_path / "gpt2" / "config.json").read_text())
    raw["model_type"] = "not_a_model"
    (tmp_path / "gpt2" / "config.json").write_text(json.dumps(raw))
    with pytest.raises(hf.CheckpointError, match=r"config\.json: transformers cannot read"):
        preflight.check(tmp_path / "gpt2")


def test_missing_or_misshapen_tensor_is_an_error_not_a_random_init(tmp_path):
    from safetensors.numpy import load_file, save_file

    build("mistral").save_pretrained(tmp_path, safe_serialization=True)
    weights = tmp_path / "model.safetensors"
    tensors = load_file(weights)
    tensors.pop("model.layers.1.self_attn.k_proj.weight")
    save_file(tensors, weights, metadata={"format": "pt"})
    with pytest.raises(hf.CheckpointError, match=r"lack tensors.*layers\.1\.self_attn\.k_proj"):
        capture.load(tmp_path)
    tensors["model.layers.1.self_attn.k_proj.weight"] = np.zeros((3, 3), np.float32)
    save_file(tensors, weights, metadata={"format": "pt"})
    with pytest.raises(hf.CheckpointError, match=r"k_proj\.weight \(3, 3\) \(config: \(32, 64\)\)"):
        capture.load(tmp_path)


def test_measure_with_the_real_grid():
    """frequencies.measure over captured internals with each model's own pairs: NeoX's chunk
    norms are the norms of its real rotating pairs, then its pass-through pairs."""
    model = build("gpt_neox")
    texts = [np.random.default_rng(s).integers(0, 97, size=12) for s in range(3)]
    grid = capture.capture(model, texts[0][None], probs=False).grids[0]
    usage = fq.measure(capture.runner(model), texts, frequencies=grid.frequencies, pairs=grid.pairs)
    layer = capture.capture(model, texts[1][None]).layers[0]
    norms = np.hypot(layer["q"][..., grid.pairs[:, 0]], layer["q"][..., grid.pairs[:, 1]])
    assert usage.q.shape == (2, 4, 8)
    one = fq.measure(
        capture.runner(model), texts[1:2], frequencies=grid.frequencies, pairs=grid.pairs
    )
    np.testing.assert_allclose(one.q[0], norms.mean(axis=(0, 1)), rtol=1e-6)


def test_gemma3_multimodal_checkpoint(tmp_path):
    """Released Gemma 3 checkpoints (4B and up) are ``Gemma3ForConditionalGeneration`` with a
    vision tower: checked, loaded and captured through their text model alike."""
    text = tiny_models.tiny_config("gemma3_text")
    vision = transformers.SiglipVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        image_size=28, patch_size=14,
    )  # fmt: skip
    config = transformers.Gemma3Config(
        text_config=text.to_dict(), vision_config=vision.to_dict(), mm_tokens_per_image=4
    )
    torch.manual_seed(0)
    transformers.Gemma3ForConditionalGeneration(config).save_pretrained(tmp_path)
    assert preflight.check(tmp_path).model_type == "gemma3"
    model = capture.load(tmp_path)
    tokens = np.random.default_rng(7).integers(0, 97, size=(1, SEQ))
    assert_matches(model, tokens)
    grids = capture.capture(model, tokens).grids
    assert [g.rope_theta for g in grids] == [10_000.0, 1_000_000.0]


def test_other_pairings_are_refused(monkeypatch):
    """A model whose RoPE pairs dims (2i, 2i+1) (interleaved) cannot be un-rotated with
    rotate_half: capture says so instead of returning wrong pre-RoPE queries."""
    model = build("llama")
    module = sys.modules[type(model).__module__]

    def interleaved(q, k, cos, sin, unsqueeze_dim=1):
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        half = cos.shape[-1] // 2
        c = torch.repeat_interleave(cos[..., :half], 2, dim=-1)
        s = torch.repeat_interleave(sin[..., :half], 2, dim=-1)

        def rot(x):
            pairs = x.unflatten(-1, (-1, 2))
            return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)

        return q * c + rot(q) * s, k * c + rot(k) * s

    monkeypatch.setattr(module, "apply_rotary_pos_emb", interleaved)
    tokens = np.random.default_rng(8).integers(0, 97, size=(1, SEQ))
    with pytest.raises(
        capture.PairingError, match=r"does not rotate as x·cos \+ rotate_half\(x\)·sin"
    ):
        capture.capture(model, tokens)


def test_gemma4_multimodal_checkpoint(tmp_path):
    """A ``gemma4`` checkpoint (``Gemma4ForConditionalGeneration``, here without its vision and
    audio towers) is checked, loaded and captured through its text model."""
    config = transformers.Gemma4Config(
        text_config=tiny_models.tiny_config("gemma4_text").to_dict(), vision_config=None,
        audio_config=None,
    )  # fmt: skip
    torch.manual_seed(0)
    transformers.Gemma4ForConditionalGeneration(config).save_pretrained(tmp_path)
    assert preflight.check(tmp_path).model_type == "gemma4"
    model = capture.load(tmp_path)
    tokens = np.random.default_rng(9).integers(0, 97, size=(1, SEQ))
    assert_matches(model, tokens)
    grids = capture.capture(model, tokens).grids
    assert [g.encoding for g in grids] == ["RoPE", "p-RoPE"]
    assert "head_dim 16 / 32 (per layer)" in capture.describe(model)


def test_per_query_head_scores_are_the_models_own():
    """The scores ``per_query_head`` rebuilds from the rotated queries and keys give the model's
    own attention under a softmax, and each query head reads its KV group's keys."""
    model = tiny_models.tiny_random_model("llama", seed=2)  # 4 query heads over 2 KV heads
    tokens = np.random.default_rng(0).integers(0, model.config.vocab_size, (2, 9))
    layer = capture.capture(model, tokens).layers[1]
    heads = capture.per_query_head(layer)
    scores = heads["scores"]
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs, layer["probs"], atol=1e-6)
    assert np.all(np.isneginf(scores[..., np.triu_indices(9, 1)[0], np.triu_indices(9, 1)[1]]))
    for name in ("k", "k_rot", "v"):
        assert heads[name].shape == layer["q"].shape[:3] + (layer[name].shape[-1],)
        np.testing.assert_array_equal(heads[name][:, :, 1], layer[name][:, :, 0])
        np.testing.assert_array_equal(heads[name][:, :, 2], layer[name][:, :, 1])


@pytest.mark.parametrize("family", ["mistral", "gemma4_text", "gpt_neox"])
def test_whole_head_readings_refuse_local_partial_or_unrotated_layers(family):
    """Mistral attends through a sliding window, Gemma 4's global layers rotate a quarter of their
    planes, Pythia a quarter of its dims: readings over every plane and the whole causal window
    (``per_head_batches``) refuse them by name; Llama passes."""
    tokens = np.random.default_rng(0).integers(3, 90, (1, 12))
    with pytest.raises(capture.CaptureError, match="every layer global and rotating every plane"):
        next(capture.per_head_batches(tiny_models.tiny_random_model(family), tokens))
    (_, layers, pairing) = next(
        capture.per_head_batches(tiny_models.tiny_random_model("llama"), tokens)
    )
    assert pairing == "half" and len(layers) == 2 and "scores" in layers[0]
