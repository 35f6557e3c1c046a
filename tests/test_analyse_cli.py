"""``python -m ropebook analyse PATH`` end to end on tiny random Gemma 3, Gemma 4, Llama 4 and
Cohere 2 checkpoints (local and global layers, p-RoPE, NoPE, interleaved pairs), and its errors for
a GPT-2 folder and a truncated safetensors file."""

import csv
import dataclasses
import json
import pathlib

import numpy as np
import pytest

from ropebook import analyse, capture, prompts, tiny_models
from ropebook.__main__ import main as ropebook_main
from ropebook.analysis import frequencies as fq

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
build = tiny_models.tiny_random_model


@pytest.fixture(scope="module")
def gemma3(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "tiny-gemma3"
    build("gemma3_text", seed=7).save_pretrained(path, safe_serialization=True)
    return path


def test_cli_writes_the_report(gemma3, tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["analyse", str(gemma3), "--out", str(out), "--tokens", "20", "--prompts", "3"]
    assert ropebook_main(argv) == 0
    captured = capsys.readouterr()
    assert "prompts: 100%" in captured.err  # the progress bar
    assert sorted(p.name for p in out.iterdir()) == sorted(analyse.REPORT_FILES)
    for name in analyse.REPORT_FILES:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (out / "summary.txt").read_text()
    assert captured.out == text
    assert "gemma3_text: 2 layers, 4 heads / 2 KV heads, head_dim 16" in text
    assert (
        "read from the config, as `python -m ropebook layers` does; the running model agrees"
        in text
    )
    assert "layer 0: sliding_attention, sliding window 8; RoPE, θ 10,000" in text
    assert "layer 1: full_attention, global; RoPE, θ 1,000,000" in text
    assert "warning [per-layer-type-rope]" in text
    assert "Unrotated planes" in text and "none: every layer rotates every plane" in text
    assert "prompts: 3 from" in text and "60 tokens in all" in text
    assert "UTF-8 bytes" in text  # the tiny checkpoint has no tokenizer
    rows = list(csv.DictReader((out / "heads.csv").open()))
    assert len(rows) == 2 * 4 and {r["kv_head"] for r in rows} == {"0", "1"}
    grid = json.loads((out / "grid.json").read_text())
    model = capture.load(gemma3)
    for layer, kind in zip(grid, ("sliding_attention", "full_attention"), strict=True):
        inv_freq = getattr(model.model.rotary_emb, f"{kind}_inv_freq").double().numpy()
        assert layer["layer_type"] == kind
        np.testing.assert_array_equal(layer["inv_freq"], inv_freq)
    arrays = np.load(out / "usage.npz")
    assert arrays["q_norm"].shape == (2, 4, 8) and arrays["k_norm"].shape == (2, 2, 8)
    assert arrays["q_isotropic"].shape == (2, 4) and arrays["diagonal"].shape == (2, 4)
    # the saved numbers are what the library computes on the same prompts
    _, texts = prompts.prompt_texts(3, 20)
    _, ids = prompts.tokenize(gemma3, texts, 20, 97)
    again = analyse.analyse_checkpoint(model, ids)
    np.testing.assert_allclose(arrays["q_norm"], again.usage.q, rtol=1e-6)
    np.testing.assert_allclose(arrays["previous"], again.previous, rtol=1e-6)
    assert f"{rows[0]['diagonal']}" == f"{again.diagonal[0, 0]:.6g}"


def test_bfloat16_run(gemma3, tmp_path):
    out = tmp_path / "bf16"
    argv = [str(gemma3), "--out", str(out), "--dtype", "bfloat16", "--tokens", "12"]
    assert analyse.main([*argv, "--prompts", "2", "--quiet"]) == 0
    assert "weights bfloat16" in (out / "summary.txt").read_text()


def refuse_weight_reads(monkeypatch):
    def no(*args, **kwargs):
        raise AssertionError("weights were read before the folder was checked")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no)


def test_gpt2_folder_is_refused_by_name(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "gpt2"
    transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2)
    ).save_pretrained(folder)
    refuse_weight_reads(monkeypatch)
    assert analyse.main([str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"error: {folder / 'config.json'}: model_type 'gpt2' has no rotary" in err
    assert "learned absolute position embeddings" in err
    assert not (tmp_path / "out").exists()


def test_truncated_safetensors_is_refused_by_name(gemma3, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "cut"
    folder.mkdir()
    for file in gemma3.iterdir():
        data = file.read_bytes()
        (folder / file.name).write_bytes(data[:-64] if file.suffix == ".safetensors" else data)
    refuse_weight_reads(monkeypatch)
    assert analyse.main([str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"error: {folder / 'model.safetensors'}: corrupt safetensors file" in err
    assert "truncated" in err
    assert not (tmp_path / "out").exists()


def test_missing_folder(tmp_path, capsys):
    assert analyse.main([str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "nowhere: checkpoint folder not found" in capsys.readouterr().err


def test_isotropic_baseline_is_what_random_directions_give():
    """Vectors with arbitrary lengths but uniformly random directions: every pair's mean norm
    matches the baseline (closed form E‖u^(k)‖ = Γ(3/2)Γ(d/2)/Γ((d+1)/2) on the unit sphere)."""
    rng = np.random.default_rng(0)
    d = 16
    directions = rng.standard_normal((4, 2000, 3, d))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    x = directions * rng.uniform(0.5, 3.0, size=(4, 2000, 3, 1))
    ratio = fq.chunk_usage(x) / fq.isotropic_baseline(x)[:, None]
    np.testing.assert_allclose(ratio, 1.0, atol=0.02)
    assert fq.isotropic_factor(2) == pytest.approx(1.0)
    # d = 4: E sqrt(Beta(1, 1)) = 2/3
    assert fq.isotropic_factor(4) == pytest.approx(2 / 3)
    # a vector living in one pair is far from isotropic there
    y = np.zeros((1, 5, 1, d))
    y[..., 0] = 1.0
    assert (fq.chunk_usage(y) / fq.isotropic_baseline(y)[:, None])[0, 0] > 3


@pytest.mark.parametrize("family", ["gemma3_text", "cohere2"])
def test_chapter_section_runs_the_same_code(family, tmp_path, monkeypatch):
    """The real-checkpoints chapter, every code cell run in order as papermill runs it (the
    parameters cell, then the values given) on a tiny checkpoint: it goes through
    analyse_checkpoint (the CLI's code, on the CLI's prompts) and records its three claims; on
    Cohere2, whose last layer is NoPE, Fig. 11's reading is taken on the last layer that rotates."""
    import jupytext
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = tmp_path / family
    build(family, seed=7).save_pretrained(folder, safe_serialization=True)
    chapter = jupytext.read(pathlib.Path(__file__).parents[1] / "chapters" / "real_checkpoints.py")
    cells = [c for c in chapter.cells if c.cell_type == "code"]
    assert any("analyse.analyse_checkpoint" in c.source for c in cells)
    given = {"checkpoint": str(folder), "checkpoint_tokens": 16, "n_prompts": 2}
    namespace = {}
    monkeypatch.setattr(plt, "show", lambda: plt.close("all"))
    for cell in cells:
        exec(compile(cell.source, "real_checkpoints.py", "exec"), namespace)  # noqa: S102
        if "parameters" in cell.metadata.get("tags", []):
            namespace.update(given)
    result = namespace["real_result"]
    if family == "gemma3_text":
        assert result.usage.q.shape == (2, 4, 8) and result.grids[1].rope_theta == 1_000_000.0
        assert namespace["last"] == 1
    else:
        assert result.rope_layers == [0] and namespace["last"] == 0
        assert namespace["real_low"] == result.low_reading(0.25)
    _, texts = prompts.prompt_texts(2, 16)  # the CLI's prompts for --prompts 2 --tokens 16
    _, ids = prompts.tokenize(folder, texts, 16, namespace["vocab"])
    assert [i.tolist() for i in namespace["real_ids"]] == [i.tolist() for i in ids]
    recorded = {c.id: c.verdict for c in namespace["CLAIMS"].claims()}
    assert recorded["real_checkpoints.hf_loader"] == "held"
    assert recorded["real_checkpoints.low_freq"] == result.low_reading(0.25).verdict
    assert recorded["real_checkpoints.diagonal_head"] in (
        "held",
        "partly",
        "not held",
        "cannot decide",
        "not testable here",
    )


def test_cli_uses_the_checkpoints_own_tokenizer(gemma3, tmp_path):
    """With tokenizer files in the folder, prompts are tokenized by them (BOS included)."""
    import shutil

    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    folder = tmp_path / "with-tokenizer"
    shutil.copytree(gemma3, folder)
    first = ["shall", "i", "compare", "thee"]
    words = first + sorted({w for w in prompts.BUILTIN_TEXT.lower().split()} - set(first))[:90]
    vocab = {"<unk>": 0, "<bos>": 1, "<eos>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", 1)]
    )
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<bos>", eos_token="<eos>", unk_token="<unk>"
    ).save_pretrained(folder)
    how, ids = prompts.tokenize(folder, ["shall i compare thee", "zzz"], 3, 97)
    assert how.startswith("the checkpoint's tokenizer")
    assert ids[0].tolist() == [1, vocab["shall"], vocab["i"]] and ids[1].tolist() == [1, 0]
    out = tmp_path / "out"
    assert analyse.main([str(folder), "--out", str(out), "--tokens", "12", "--quiet"]) == 0
    assert "tokenized with the checkpoint's tokenizer" in (out / "summary.txt").read_text()


def test_unreadable_rope_is_an_error_message(gemma3, tmp_path, capsys, monkeypatch):
    """A model whose RoPE pairs dims otherwise than rotate_half: a one-line error, no report."""
    import sys

    module = sys.modules[type(capture.load(gemma3)).__module__]
    rotate = module.apply_rotary_pos_emb
    monkeypatch.setattr(
        module, "apply_rotary_pos_emb", lambda q, k, cos, sin, *a, **kw: rotate(q, k, cos, -sin)
    )
    out = tmp_path / "out"
    assert analyse.main([str(gemma3), "--out", str(out), "--tokens", "8", "--quiet"]) == 2
    assert "does not rotate as x·cos + rotate_half(x)·sin" in capsys.readouterr().err
    assert not out.exists()


# per family: each layer's line in the summary, and which layers have unrotated planes
LAYOUTS = {
    "gemma4_text": (
        ["layer 0: sliding_attention, sliding window 8; RoPE, θ 10,000, default (no scaling); "
         "half pairing (k, k + R/2); 8 of 8 planes rotate (dims [0, 16) of 16)",
         "layer 1: full_attention, global; p-RoPE, θ 1,000,000, proportional "
         "(partial_rotary_factor 0.25); half pairing (k, k + R/2); 4 of 16 planes rotate "
         "(dims [0, 4), [16, 20) of 32)"],
        {1: "  layer 1 (p-RoPE; planes 4–15 of 16): "},
    ),
    "llama4_text": (
        ["layer 0: chunked_attention, chunks of 8; RoPE, θ 500,000, default (no scaling); "
         "interleaved pairing (2k, 2k + 1); 8 of 8 planes rotate",
         "layer 1: full_attention, global; NoPE: no plane rotates"],
        {1: "  layer 1 (NoPE; planes 0–7 of 8): "},
    ),
    "cohere2": (
        ["layer 0: sliding_attention, sliding window 8; RoPE, θ 10,000, default (no scaling); "
         "interleaved pairing (2k, 2k + 1); 8 of 8 planes rotate",
         "layer 1: full_attention, global; NoPE: no plane rotates"],
        {1: "  layer 1 (NoPE; planes 0–7 of 8): "},
    ),
}  # fmt: skip


@pytest.mark.parametrize("family", list(LAYOUTS))
def test_cli_reads_local_global_p_rope_and_nope_layers(family, tmp_path, capsys):
    """The 2025–26 layouts: every layer's span and encoding in the summary, grid.json and
    heads.csv; the frequency bands over each RoPE layer's rotated planes only, the unrotated
    planes (p-RoPE's slow ones, a NoPE layer's all) reported apart, from the saved arrays."""
    folder = tmp_path / family
    build(family, seed=3).save_pretrained(folder, safe_serialization=True)
    out = tmp_path / "report"
    argv = [str(folder), "--out", str(out), "--tokens", "20", "--prompts", "3", "--quiet"]
    assert analyse.main(argv) == 0
    text = (out / "summary.txt").read_text()
    assert capsys.readouterr().out == text
    lines, unrotated = LAYOUTS[family]
    for line in lines:
        assert f"\n  {line}" in text, line
    grid = json.loads((out / "grid.json").read_text())
    model = capture.load(folder)
    found = capture.capture(model, np.arange(1, 21)[None], probs=False).grids
    arrays = np.load(out / "usage.npz")
    for layer, entry in enumerate(grid):
        assert entry["encoding"] == found[layer].encoding
        assert entry["attention"] == ("global" if layer == 1 else "local")
        assert entry["pairing"] == found[layer].pairing
        n = found[layer].n_chunks
        np.testing.assert_array_equal(arrays["rotated"][layer, :n], found[layer].rotated)
        assert entry["unrotated_pairs"] == np.flatnonzero(~found[layer].rotated).tolist()
    rows = list(csv.DictReader((out / "heads.csv").open()))
    for row in rows:
        assert row["encoding"] == found[int(row["layer"])].encoding
    nope = [r for r in rows if r["encoding"] == "NoPE"]
    assert all(r["q_fast_share"] == "nan" for r in nope) and (family == "gemma4_text") != bool(nope)
    # the reading's slowest band is each RoPE layer's slowest rotated planes, from the arrays
    q = arrays["q_norm"]
    shares = []
    for layer, entry in enumerate(grid):
        rotated = entry["rotated_pairs"]
        if rotated:
            profile = np.nanmean(q[layer][:, rotated], axis=0)
            shares.append(fq.band_share(profile, 0.25, "low"))
    assert f"queries  slowest-band share {np.mean(shares):.3f}" in text
    for layer, start in unrotated.items():
        line = next(li for li in text.splitlines() if li.startswith(start))
        kept = grid[layer]["unrotated_pairs"]
        ratio = np.nansum(q[layer][:, kept], axis=0) / np.nansum(arrays["q_isotropic"][layer])
        assert f"queries {ratio.mean():.2f} ({ratio.min():.2f}–{ratio.max():.2f})" in line


def test_low_reading_is_the_chapters_on_an_all_rope_model(gemma3):
    """Where every layer rotates every plane, the CLI's reading is the chapter's
    (``fq.checkpoint_low_reading`` on the whole usage), number for number."""
    _, texts = prompts.prompt_texts(3, 16)
    _, ids = prompts.tokenize(gemma3, texts, 16, 97)
    result = analyse.analyse_checkpoint(capture.load(gemma3), ids)
    assert result.rope_layers == [0, 1]
    per_prompt = [
        fq.FrequencyUsage(
            *(result.by_prompt[kind][p] for kind in fq.KINDS), result.usage.frequencies,
            result.usage.pairing, n_texts=1, n_tokens=result.usage.n_tokens,
        )
        for p in range(3)
    ]  # fmt: skip
    np.testing.assert_allclose(np.mean([u.q for u in per_prompt], axis=0), result.usage.q)
    assert result.low_reading(0.25) == fq.checkpoint_low_reading(per_prompt, 0.25)
    kept_none = dataclasses.replace(result, by_prompt=None)  # no per-prompt norms: named
    with pytest.raises(ValueError, match="no per-prompt norms kept"):
        kept_none.low_reading(0.25)
    last = result.layer_usage(1)
    np.testing.assert_array_equal(last.q, result.usage.q[1:])
    np.testing.assert_allclose(
        result.fast_share(0.25), fq.band_share(result.usage.heads("q"), 0.25, "high"), rtol=1e-12
    )
