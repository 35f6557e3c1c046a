"""Any transformers RoPE checkpoint, checked before a single weight is read.

:func:`check` validates a folder: that ``config.json`` is there and transformers reads it, that the
model has rotary position embeddings (GPT-2, OPT, BLOOM, ... are refused by name, with what they
use instead), that ``AutoModelForCausalLM`` can run it, and every safetensors header's byte ranges
against its file's size. A failure raises :class:`ropebook.hf.CheckpointError` naming the file,
before anything long starts. :func:`text_config` and :func:`rope_parameters` read the language
model's part of a config (a multimodal model's text config) for the modules that then load
(:func:`ropebook.capture.load`) and measure it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ropebook import hf
from ropebook.hf import CheckpointError

_NOT_ROTARY = {
    "gpt2": "GPT-2 uses learned absolute position embeddings, not RoPE",
    "gpt_bigcode": "GPT-BigCode uses learned absolute position embeddings, not RoPE",
    "opt": "OPT uses learned absolute position embeddings, not RoPE",
    "bloom": "BLOOM uses ALiBi, not RoPE",
    "mpt": "MPT uses ALiBi, not RoPE",
    "bert": "BERT is an encoder with learned absolute position embeddings",
}


@dataclass
class CheckpointInfo:
    """What :func:`check` learnt about a folder without reading weights."""

    path: Path
    model_type: str
    config: Any  # the transformers config
    files: list[Path] = field(default_factory=list)
    n_tensors: int = 0
    n_bytes: int = 0


def text_config(config):
    """The language model's config (``config`` itself, or a multimodal model's text config)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def rope_parameters(config) -> dict[str, Any]:
    """``config.rope_parameters`` of a transformers config (``{}`` if it has no RoPE)."""
    params = getattr(text_config(config), "rope_parameters", None)
    return dict(params) if isinstance(params, dict) else {}


def check(path: Path | str) -> CheckpointInfo:
    """Validate a checkpoint folder without reading weights; raise :class:`CheckpointError`
    naming the file at fault (missing folder or ``config.json``, a model without rotary
    embeddings, a type transformers cannot run as a causal LM, missing or truncated safetensors)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(
            f"{path}: checkpoint folder not found (expected config.json + *.safetensors)"
        )
    where = path / "config.json"
    raw = hf._read_json(where)
    model_type = str(raw.get("model_type"))
    if model_type in _NOT_ROTARY:
        raise CheckpointError(
            f"{where}: model_type {model_type!r} has no rotary position embedding "
            f"({_NOT_ROTARY[model_type]}); ropebook analyses RoPE models"
        )
    try:
        config = transformers.AutoConfig.from_pretrained(str(path), local_files_only=True)
    except (ValueError, KeyError, OSError, TypeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"{where}: transformers cannot read this config ({first})") from None
    if not rope_parameters(config):
        raise CheckpointError(
            f"{where}: model_type {model_type!r} has no rotary position embedding (no "
            "rope_parameters / rope_theta); ropebook analyses RoPE models"
        )
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise CheckpointError(
            f"{where}: model_type {model_type!r} is not a causal language model transformers "
            "can run (AutoModelForCausalLM has no class for it)"
        )
    files = sorted(set(hf.weight_files(path).values()))
    n_tensors = n_bytes = 0
    for file in files:
        header = hf.safetensors_header(file)  # byte ranges checked against the file size
        n_tensors += len(header)
        n_bytes += file.stat().st_size
    return CheckpointInfo(path, model_type, config, files, n_tensors, n_bytes)
