"""``python -m ropebook layers``: a config's per-layer RoPE against transformers' running models,
closed forms and ropebook.scaling; one test per trap; bad input refused in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ropebook import capture, rope_layers, rope_releases, tiny_models

transformers = pytest.importorskip("transformers")


def write_config(tmp_path, family: str, **extra) -> str:
    """A tiny ``family`` config saved as transformers saves it, with ``extra`` written over it
    as raw ``config.json`` fields (so legacy and odd fields stay as a reader would find them)."""
    raw = tiny_models.tiny_config(family).to_dict()
    raw.update(extra)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return str(path)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = rope_layers.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def trap_lines(out: str, name: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"warning [{name}]")]


@pytest.mark.parametrize("family", list(capture.FAMILIES))
def test_every_layer_matches_the_running_model(family):
    """The config reading equals what ropebook.capture reads from transformers' own forward pass
    (frequencies from the cos/sin the layers were handed, scope, pairing, NoPE by rotation
    calls), for every family analyse reads."""
    model = tiny_models.tiny_random_model(family)
    found = capture.capture(model, np.arange(3, 15)[None], probs=False)
    reading = rope_layers.read(model.config)
    assert len(reading.layers) == len(found.grids)
    for ours, theirs in zip(reading.layers, found.grids, strict=True):
        g = ours.grid
        assert (g.encoding, g.pairing, g.window, g.chunk) == (
            theirs.encoding, theirs.pairing, theirs.window, theirs.chunk,
        ), f"{family} layer {ours.index}"  # fmt: skip
        assert (g.head_dim, g.rotary_dim) == (theirs.head_dim, theirs.rotary_dim)
        np.testing.assert_allclose(g.inv_freq, theirs.inv_freq, rtol=1e-6)
        assert g.attention_scaling == pytest.approx(theirs.attention_scaling)
    assert all(v.startswith("agrees") for v in dict(reading.crosscheck).values()), (
        reading.crosscheck
    )


@pytest.mark.parametrize(
    ("family", "rope"),
    [
        ("llama", {"rope_type": "linear", "factor": 4.0}),
        ("llama", {"rope_type": "dynamic", "factor": 2.0}),
        ("llama", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}),
        ("llama", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
        ("phi3", {"rope_type": "longrope", "short_factor": [1.0 + i / 8 for i in range(8)],
                  "long_factor": [2.0 + i / 4 for i in range(8)], "factor": 4.0,
                  "original_max_position_embeddings": 64}),
    ],
)  # fmt: skip
def test_every_scaling_rule_agrees_with_ropebook_scaling(family, rope):
    config = tiny_models.tiny_config(family, rope_parameters={"rope_theta": 10_000.0, **rope})
    reading = rope_layers.read(config)
    [(name, verdict)] = reading.crosscheck
    assert rope["rope_type"] in name and verdict.startswith("agrees"), verdict
    # and transformers' own function, called here directly, gives the same grid
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    inv_freq, factor = ROPE_INIT_FUNCTIONS[rope["rope_type"]](config)
    np.testing.assert_allclose(reading.layers[0].grid.inv_freq, inv_freq.double().numpy())
    assert reading.layers[0].grid.attention_scaling == pytest.approx(factor)


def test_a_mismatch_with_ropebook_scaling_is_named():
    reading = rope_layers.read(tiny_models.tiny_config("llama"))
    layer = reading.layers[0]
    off = rope_layers.dataclasses.replace(layer.grid, inv_freq=layer.grid.inv_freq * 1.01)
    broken = rope_layers.dataclasses.replace(
        reading, layers=(rope_layers.LayerRope(0, off, (), "test"),)
    )
    [(_, verdict)] = rope_layers.crosscheck(broken).items()
    assert verdict.startswith("differs") and "1.0e-02" in verdict


def test_gemma4_global_layers_rotate_two_blocks_of_fast_planes():
    """Gemma 4's class defaults: the global layers keep the fastest quarter of θ = 10⁶'s
    512-dim grid, whose slowest plane turns every 2π·10⁶^(126/512) ≈ 188 tokens."""
    reading = rope_layers.read_config("gemma4_text")
    top = next(layer for layer in reading.layers if layer.span is None)
    assert top.grid.encoding == "p-RoPE" and top.grid.n_rotated == 64
    assert top.rotated_dims == [(0, 64), (256, 320)]
    np.testing.assert_allclose(top.frequencies, 1e6 ** (-np.arange(0, 128, 2) / 512), rtol=1e-6)
    assert top.wavelengths[-1] == pytest.approx(2 * math.pi * 1e6 ** (126 / 512), rel=1e-6)
    assert round(top.wavelengths[-1]) == 188
    local = reading.layers[0]
    assert local.span == 512 and local.slow_planes(512) == int(
        np.sum(1e4 ** (-np.arange(0, 256, 2) / 256) * 512 < 2 * math.pi)
    )
    assert reading.pattern == "LLLLLG" * 5


# ---------------------------------------------------------------------------------------------
# one test per trap: a tiny config that falls into it, and the line printed


def test_trap_proportional_without_factor(tmp_path, capsys):
    params = {"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
              "full_attention": {"rope_type": "proportional", "rope_theta": 1e6}}  # fmt: skip
    code, out, _ = run(capsys, write_config(tmp_path, "gemma4_text", rope_parameters=params))
    [line] = trap_lines(out, "proportional-without-factor")
    assert code == 0 and "linear scaling with factor 1" in line
    assert "layer 1: full_attention, global; RoPE" in out  # every plane rotates


def test_trap_proportional_planes(tmp_path, capsys):
    code, out, _ = run(capsys, write_config(tmp_path, "gemma4_text"))
    [line] = trap_lines(out, "proportional-planes")
    assert "the dims that rotate are [0, 4) and [16, 20) of 32, not the first 8" in line


def test_trap_partial_default(tmp_path, capsys):
    code, out, _ = run(capsys, write_config(tmp_path, "gpt_neox"))
    [line] = trap_lines(out, "partial-default")
    # 4 of 16 dims rotate: θ^(−2i/4) over 2 planes, against θ^(−2i/16)'s fastest 2
    assert "squeezes the whole spectrum onto 2 planes" in line
    assert f"slowest wavelength {2 * math.pi * 1e4 ** (2 / 4):,.0f} tokens" in line
    assert f"(slowest {2 * math.pi * 1e4 ** (2 / 16):.3g} tokens)" in line


def test_trap_no_rope_mask(tmp_path, capsys):
    path = write_config(tmp_path, "llama4_text", no_rope_layers=[0, 1], layer_types=None)
    code, out, _ = run(capsys, path)
    [line] = trap_lines(out, "no-rope-mask")
    assert "1 NoPE layers (0)" in line and "applies to the RoPE layers only" in line
    assert "layer 0: full_attention, global; NoPE" in out
    assert "layer 1: chunked_attention, chunks of 8" in out
    # layer types written for the opposite mask: transformers chunks the NoPE layer, as said
    path = write_config(tmp_path, "llama4_text", no_rope_layers=[0, 1])
    code, out, _ = run(capsys, path)
    [line] = trap_lines(out, "no-rope-mask")
    assert (
        "layer_types chunk NoPE layers (0)" in line
        and "layer 0: chunked_attention, chunks of 8; NoPE" in out
    )


def test_trap_scaled_local_layers(tmp_path, capsys):
    rope = {"rope_type": "linear", "factor": 4.0, "rope_theta": 10_000.0}
    code, out, _ = run(capsys, write_config(tmp_path, "mistral", rope_parameters=rope))
    [line] = trap_lines(out, "scaled-local-layers")
    assert "attend within 8 tokens yet take the 'linear' context extension" in line


def test_trap_global_only_scaling_and_legacy_fields(tmp_path, capsys):
    """Gemma 3 4B's released fields (transformers 4 style): linear ×8 reaches the global
    layers only; the local layers keep θ 10⁴ unscaled."""
    raw = {"rope_scaling": {"rope_type": "linear", "factor": 8.0}, "rope_theta": 1e6,
           "rope_local_base_freq": 1e4, "rope_parameters": None}  # fmt: skip
    path = write_config(tmp_path, "gemma3_text", **raw)
    code, out, _ = run(capsys, path)
    assert trap_lines(out, "global-only-scaling") and trap_lines(out, "per-layer-type-rope")
    [legacy] = trap_lines(out, "legacy-rope-fields")
    assert "full_attention: θ 1,000,000, linear ×8" in legacy
    reading = rope_layers.read_config(path)
    local, top = reading.layers
    np.testing.assert_allclose(local.frequencies, 1e4 ** (-np.arange(0, 16, 2) / 16), rtol=1e-6)
    np.testing.assert_allclose(top.frequencies, 1e6 ** (-np.arange(0, 16, 2) / 16) / 8, rtol=1e-6)


def test_trap_legacy_theta_beside_rope_parameters(tmp_path, capsys):
    path = write_config(tmp_path, "llama", rope_theta=500_000.0,
                        rope_parameters={"rope_type": "default", "rope_theta": 10_000.0})  # fmt: skip
    code, out, _ = run(capsys, path)
    [line] = trap_lines(out, "legacy-rope-fields")
    assert "the top-level rope_theta 500,000.0 is ignored for rope_parameters' 10,000.0" in line
    assert "θ 10,000, default" in out


def test_trap_sliding_window_off(tmp_path, capsys):
    path = write_config(tmp_path, "qwen3", sliding_window=8, use_sliding_window=False)
    code, out, _ = run(capsys, path)
    [line] = trap_lines(out, "sliding-window-off")
    assert "sliding_window 8 is ignored" in line and "layers 0–1 (2): full_attention, global" in out


def test_trap_window_from_max_window_layers(tmp_path, capsys):
    path = write_config(tmp_path, "qwen3", sliding_window=8, use_sliding_window=True,
                        max_window_layers=1, layer_types=None)  # fmt: skip
    code, out, _ = run(capsys, path)
    [line] = trap_lines(out, "window-from-max-window-layers")
    assert "max_window_layers (1) only: layer 1 slide" in line
    assert "layer 0: full_attention, global" in out
    assert "layer 1: sliding_attention, sliding window 8" in out


def test_trap_interleaved_pairing(tmp_path, capsys):
    code, out, _ = run(capsys, write_config(tmp_path, "cohere2"))
    [line] = trap_lines(out, "interleaved-pairing")
    assert "cohere2 pairs dims (2k, 2k + 1)" in line
    assert "layer 1: full_attention, global; NoPE" in out


def test_trap_per_layer_type_rope(capsys):
    code, out, _ = run(capsys, "gemma3_text", "--brief")
    [line] = trap_lines(out, "per-layer-type-rope")
    assert "sliding_attention: θ 10,000" in line and "full_attention: θ 1,000,000" in line
    assert "plane: ω" not in out  # --brief


def test_trap_pairing_assumed(tmp_path, capsys):
    raw = {"model_type": "starcoder2", "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 96,
           "vocab_size": 97, "bos_token_id": 1, "eos_token_id": 2}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    code, out, _ = run(capsys, str(tmp_path))
    assert code == 0 and trap_lines(out, "pairing-assumed")


def test_every_trap_has_a_test():
    tested = {
        name for name in rope_layers.TRAPS if f"test_trap_{name.replace('-', '_')}" in globals()
    }
    # the names tested under combined tests, and the mismatch's own test
    tested |= {"global-only-scaling", "legacy-rope-fields", "scaling-mismatch"}
    assert tested == set(rope_layers.TRAPS)


# ---------------------------------------------------------------------------------------------
# output and bad input


def test_json_carries_every_plane(capsys):
    code, out, _ = run(capsys, "llama4_text", "--json")
    data = json.loads(out)
    assert code == 0 and data["context"] == 131_072 and len(data["layers"]) == 48
    rope, nope = data["layers"][0], data["layers"][3]
    assert rope["scope"] == "chunk" and rope["chunk"] == 8192 and rope["pairing"] == "interleaved"
    assert nope["encoding"] == "NoPE" and nope["rotated_planes"] == []
    np.testing.assert_allclose(rope["frequencies"], 5e5 ** (-np.arange(0, 128, 2) / 128), rtol=1e-6)
    assert {w["name"] for w in data["warnings"]} == {"no-rope-mask", "interleaved-pairing"}


def test_text_lists_every_rotated_plane(capsys):
    code, out, _ = run(capsys, "llama")
    assert "  63: " in out and "  64: " not in out  # LlamaConfig: head 128, 64 planes


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file or folder, and not a transformers model type"),
        ("[1, 2]", "expected a JSON object"),
        ("not json", "not valid JSON"),
        ('{"hidden_size": 64}', "not a model config (no model_type)"),
        (
            '{"model_type": "llama", "rope_parameters": {"rope_type": "wobbly", "factor": 2}}',
            "unknown rope type 'wobbly'",
        ),
        ('{"model_type": "gpt2"}', "has no rotary position embedding"),
    ],
)
def test_bad_input_gets_a_one_line_error(tmp_path, capsys, content, message):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    code, out, err = run(capsys, str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


# ---------------------------------------------------------------------------------------------
# the layouts chapter's production table and figure


def test_released_sizes_name_what_differs_from_the_class_defaults():
    gemma3 = rope_releases.RELEASED["gemma3"]
    changed = "; ".join(gemma3.differences())
    assert "sliding_window 1,024 (class default 4,096)" in changed
    assert "full_attention: θ 1,000,000, linear ×8" in changed
    reading = gemma3.reading()
    assert {t.name for t in reading.traps} >= {"global-only-scaling", "per-layer-type-rope"}
    top = next(layer for layer in reading.layers if layer.span is None)
    np.testing.assert_allclose(top.frequencies, 1e6 ** (-np.arange(0, 256, 2) / 256) / 8, rtol=1e-6)
    assert rope_releases.RELEASED["gemma4"].differences() == []  # its class defaults, said so
    llama = rope_releases.RELEASED["llama3.1"].reading()
    assert llama.layers[0].grid.rope_type == "llama3" and rope_layers.largest_gap(llama) < 1e-5


def test_smollm2_values_match_the_books_own_checkpoint():
    """The SmolLM2 row against the config of the checkpoint the book converts (if cached)."""
    from ropebook import real_model

    path = real_model.folder() / "config.json"
    if not path.is_file():
        pytest.skip("SmolLM2 not converted in this cache (ropebook.real_model.ensure)")
    ours = rope_releases.RELEASED["smollm2"].reading()
    theirs = rope_layers.read_config(path)
    assert ours.context == theirs.context and len(ours.layers) == len(theirs.layers)
    np.testing.assert_allclose(ours.layers[0].grid.inv_freq, theirs.layers[0].grid.inv_freq)


def test_production_table_and_figure_come_from_the_command():
    from ropebook.present import layouts as show

    rows = show.config_rows()
    models = {entry.model for entry in rope_releases.RELEASED.values()}
    assert {r["model (context)"].split(" (")[0] for r in rows} - {""} == models
    start = next(i for i, r in enumerate(rows) if r["model (context)"].startswith("Gemma 4"))
    gemma4 = rows[start : start + 2]
    assert gemma4[1]["rotating (dims)"] == "64 of 256 (0–63, 256–319)"
    sources = {r["model"]: r for r in show.config_sources()}
    assert set(sources) == models
    assert "linear" in sources["Gemma 3 4B"]["differs from the class defaults in"]
    assert sources["Gemma 4"]["differs from the class defaults in"] == "—"
    assert gemma4[1]["wavelengths (tokens)"] == "6.28 to 188"
    chart = show.wavelength_chart().to_dict()
    values = chart["datasets"][chart["layer"][0]["data"]["name"]]
    rows_drawn = {v["row"] for v in values}
    assert "Gemma 4 · global: 64 of 256 planes rotate" in rows_drawn
    assert "Llama 4 · global: 0 of 64 planes rotate" in rows_drawn
