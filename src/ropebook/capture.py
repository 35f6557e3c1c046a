"""Queries, keys, values and attention of *any* transformers RoPE causal LM, by one generic path.

:mod:`ropebook.hf` re-implements Llama and Gemma in JAX. This module instead lets transformers run
the model and listens: transformers 5 sends every attention layer's call through its
attention-function registry (``transformers.AttentionInterface``), handing the registered function
the layer's queries and keys *after* RoPE and its values. :func:`capture` registers one such
function (``"ropebook_capture"``; it computes attention with the model's own eager function, so
soft-capping, sliding windows and scalings stay the model's), and a forward pre-hook on each
attention module reads the ``(cos, sin)`` it was given. From those:

- queries and keys *before* RoPE are recovered by rotating back (``x = (y·cos −
  rotate_half(y)·sin) / (cos² + sin²)``, float32, ~1e-7 off) — i.e. after whatever the model
  does first (Qwen 3's and OLMo 2's q/k norms); on the first layer of every run the result is
  rotated forward again with the model's own ``apply_rotary_pos_emb`` and must give back what
  the layer used, else :class:`PairingError` (a model pairing dims otherwise, e.g. interleaved);
- each layer's rotary grid (:class:`RotaryGrid`): how many dims rotate (GPT-NeoX / Pythia rotate
  the first 25 %), at which frequencies (the rotary module's ``inv_freq`` buffer whose angles the
  layer's cos/sin show: Gemma 3's local and global layers get their own) and the scaling type.

Shapes follow the book: ``q``, ``q_rot`` ``[B, T, H, D]``; ``k``, ``k_rot``, ``v`` ``[B, T, H_kv,
D]`` (grouped-query attention keeps the KV head count; query head ``h`` reads KV head
``h // (H / H_kv)``); ``probs [B, H, T, T]`` float32. Chunks use the *half* pairing inside the
rotated dims (``rotate_half``), the convention of every family tested here.

:func:`check` validates a folder — config, that it is a causal LM with rotary embeddings, and every
safetensors header's byte ranges against the file size — before any weight is read, raising
:class:`ropebook.hf.CheckpointError` naming the file; :func:`load` then also refuses missing or
misshapen tensors instead of letting transformers initialise them at random.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import hf
from ropebook.hf import CheckpointError

ATTENTION = "ropebook_capture"
DTYPES: tuple[str, ...] = ("float32", "bfloat16")
# model_type -> what is special about it; each is tested on a tiny random checkpoint
FAMILIES: dict[str, str] = {
    "llama": "Llama 2/3/3.1 (llama3 scaling)",
    "mistral": "Mistral (sliding window)",
    "qwen2": "Qwen 2 / 2.5 (q/k/v biases)",
    "qwen3": "Qwen 3 (q/k RMSNorm before RoPE)",
    "gemma": "Gemma 1 (head_dim 256 ≠ d/H at 7B)",
    "gemma2": "Gemma 2 (logit soft-capping, local/global layers)",
    "gemma3_text": "Gemma 3 (q/k norm, per-layer RoPE bases: 10k local, 1M global)",
    "phi3": "Phi-3 (fused qkv projection)",
    "olmo2": "OLMo 2 (q/k norm over all heads)",
    "gpt_neox": "GPT-NeoX / Pythia (rotary on the first 25 % of each head)",
}
_NOT_ROTARY = {
    "gpt2": "GPT-2 uses learned absolute position embeddings, not RoPE",
    "gpt_bigcode": "GPT-BigCode uses learned absolute position embeddings, not RoPE",
    "opt": "OPT uses learned absolute position embeddings, not RoPE",
    "bloom": "BLOOM uses ALiBi, not RoPE",
    "mpt": "MPT uses ALiBi, not RoPE",
    "bert": "BERT is an encoder with learned absolute position embeddings",
}


@dataclass(frozen=True)
class RotaryGrid:
    """How one layer rotates its heads.

    The first ``rotary_dim`` dims of each head rotate, chunk ``k`` being dims ``(k, k +
    rotary_dim/2)`` at ``inv_freq[k]`` rad/token; the other ``head_dim - rotary_dim`` dims pass
    through (frequency 0), paired the same way among themselves. cos/sin are multiplied by
    ``attention_scaling`` (1 except for YaRN / LongRoPE).
    """

    head_dim: int
    rotary_dim: int
    inv_freq: np.ndarray  # [rotary_dim / 2], fastest first
    attention_scaling: float = 1.0
    rope_type: str = "default"
    rope_theta: float | None = None
    layer_type: str | None = None
    source: str = ""  # the buffer read, e.g. "model.rotary_emb.inv_freq"

    @property
    def n_chunks(self) -> int:
        return self.head_dim // 2

    @property
    def partial(self) -> bool:
        return self.rotary_dim < self.head_dim

    @property
    def pairs(self) -> np.ndarray:
        """``[head_dim/2, 2]`` dims of every chunk: rotated chunks first (fastest first), then
        the pass-through ones."""
        r, rest = self.rotary_dim, self.head_dim - self.rotary_dim
        rotated = [(k, k + r // 2) for k in range(r // 2)]
        passing = [(r + k, r + k + rest // 2) for k in range(rest // 2)]
        return np.asarray(rotated + passing, dtype=np.int64).reshape(-1, 2)

    @property
    def frequencies(self) -> np.ndarray:
        """``[head_dim/2]`` angular frequency of every chunk of :attr:`pairs` (0: not rotated)."""
        rest = (self.head_dim - self.rotary_dim) // 2
        return np.concatenate([np.asarray(self.inv_freq, np.float64), np.zeros(rest)])

    def describe(self) -> str:
        part = f"{self.rotary_dim} of {self.head_dim} dims rotate" if self.partial else "all dims"
        theta = f"theta {self.rope_theta:,.0f}, " if self.rope_theta else ""
        scale = f", cos/sin x {self.attention_scaling:g}" if self.attention_scaling != 1 else ""
        kind = f"{self.layer_type}: " if self.layer_type else ""
        g = self.inv_freq
        return (
            f"{kind}{part}; {theta}{self.rope_type}; g from {g[0]:.3g} to {g[-1]:.3g} "
            f"rad/token{scale}"
        )


@dataclass
class Capture:
    """One forward pass: ``logits [B, T, V]`` float32, per-layer arrays (see the module
    docstring) and per-layer :class:`RotaryGrid`."""

    logits: np.ndarray
    layers: list[dict[str, np.ndarray]]
    grids: list[RotaryGrid]


@dataclass
class CheckpointInfo:
    """What :func:`check` learnt about a folder without reading weights."""

    path: Path
    model_type: str
    config: Any  # the transformers config
    files: list[Path] = field(default_factory=list)
    n_tensors: int = 0
    n_bytes: int = 0


# ---------------------------------------------------------------------------------------------
# checks before any weight is read


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


def load(path: Path | str, *, dtype: str = "float32"):
    """:func:`check` the folder, then load it with ``AutoModelForCausalLM`` in ``dtype``
    (float32 or bfloat16), set up for :func:`capture`. Tensors the config needs but the files
    lack are an error, not a random initialisation."""
    import torch
    import transformers

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    info = check(path)
    register()
    transformers.utils.logging.disable_progress_bar()
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()
    try:
        model, loading = transformers.AutoModelForCausalLM.from_pretrained(
            str(info.path), dtype=getattr(torch, dtype), attn_implementation=ATTENTION,
            local_files_only=True, output_loading_info=True, ignore_mismatched_sizes=True,
        )  # fmt: skip
    finally:
        transformers.utils.logging.enable_progress_bar()
        transformers.utils.logging.set_verbosity(verbosity)

    def shown(names) -> str:
        names = sorted(map(str, names))
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        return ", ".join(names[:5]) + more

    if loading.get("mismatched_keys"):
        found = [
            f"{m[0]} {tuple(m[1])} (config: {tuple(m[2])})" if len(m) == 3 else str(m)
            for m in loading["mismatched_keys"]
        ]
        raise CheckpointError(
            f"{info.path}: tensors have shapes the config does not imply: {shown(found)}"
        )
    if loading.get("missing_keys"):
        raise CheckpointError(
            f"{info.path}: the weights lack tensors the config needs: "
            f"{shown(loading['missing_keys'])}"
        )
    return model.eval()


# ---------------------------------------------------------------------------------------------
# the attention function and the recorder


class _Recorder:
    def __init__(self, keep_probs: bool):
        self.keep_probs = keep_probs
        self.rotary: dict[int, tuple[Any, Any]] = {}  # id(attention module) -> (cos, sin)
        self.calls: list[tuple[Any, dict[str, np.ndarray]]] = []


_ACTIVE: list[_Recorder] = []


def _generic_eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    import torch

    group = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask[..., : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _eager_for(module):
    """The eager attention function of ``module``'s own modeling file (soft-capping, sinks and
    the like included), or a plain one."""
    return getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None) or (
        _generic_eager
    )


def _rotate_half(x):
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def unrotate(y, cos, sin):
    """Undo ``y = x·cos + rotate_half(x)·sin`` on the first ``cos.shape[-1]`` dims of ``y [B, H,
    T, D]`` (``cos, sin [B, T, R]``), computed in float32; the other dims pass through."""
    import torch

    r = cos.shape[-1]
    c, s = cos[:, None].float(), sin[:, None].float()
    head, rest = y[..., :r].float(), y[..., r:].float()
    x = (head * c - _rotate_half(head) * s) / (c * c + s * s)
    return torch.cat((x, rest), dim=-1)


class CaptureError(RuntimeError):
    """The model runs, but not in a way :func:`capture` can read (the message says why)."""


class PairingError(CaptureError):
    """The model rotates otherwise than ``x·cos + rotate_half(x)·sin`` (e.g. interleaved pairs)."""


def _check_pairing(module, q_pre, k_pre, query, key, cos, sin) -> None:
    """Rotate the recovered pre-RoPE queries and keys forward with the model's own
    ``apply_rotary_pos_emb`` (when its modeling file has one): if that does not give back what
    the layer used, the model pairs dims differently and pre-RoPE arrays would be wrong."""
    apply = getattr(sys.modules.get(type(module).__module__), "apply_rotary_pos_emb", None)
    if apply is None:
        return
    try:
        q_again, k_again = apply(q_pre.to(query.dtype), k_pre.to(key.dtype), cos, sin)
    except (TypeError, RuntimeError, ValueError):  # another signature: nothing to compare
        return
    scale = float(max(query.abs().max(), key.abs().max(), 1e-30))
    gap = float(max((q_again - query).abs().max(), (k_again - key).abs().max())) / scale
    tolerance = 1e-4 if query.dtype == q_pre.dtype else 3e-2
    if gap > tolerance:
        raise PairingError(
            f"{type(module).__module__}.apply_rotary_pos_emb does not rotate as "
            f"x·cos + rotate_half(x)·sin (relative gap {gap:.1e}); ropebook.capture cannot "
            "recover pre-RoPE queries and keys"
        )


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The registered attention function: the module's own eager attention, recorded."""
    out, weights = _eager_for(module)(
        module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
    )
    if _ACTIVE:
        recorder = _ACTIVE[-1]
        if id(module) not in recorder.rotary:
            raise CaptureError(
                f"{type(module).__name__} called attention without position_embeddings (cos, sin):"
                " not a RoPE layer ropebook.capture can read"
            )
        cos, sin = recorder.rotary[id(module)]
        q_pre, k_pre = unrotate(query, cos, sin), unrotate(key, cos, sin)
        if not recorder.calls:
            _check_pairing(module, q_pre, k_pre, query, key, cos, sin)
        record = {
            "q_rot": query.transpose(1, 2),
            "k_rot": key.transpose(1, 2),
            "v": value.transpose(1, 2),
            "q": q_pre.transpose(1, 2),
            "k": k_pre.transpose(1, 2),
        }
        record = {n: a.detach().float().cpu().numpy() for n, a in record.items()}
        if recorder.keep_probs:
            record["probs"] = weights.detach().float().cpu().numpy()
        record["cos"], record["sin"] = (a.detach().float().cpu().numpy() for a in (cos, sin))
        recorder.calls.append((module, record))
    return out, weights


def register() -> None:
    """Register :data:`ATTENTION` with transformers' attention-function and mask registries
    (masks as for ``eager``: additive float masks with sliding windows applied)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTENTION, _attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)


def _grab_rotary(recorder: _Recorder):
    def hook(module, args, kwargs):
        try:
            bound = inspect.signature(module.forward).bind_partial(*args, **kwargs)
        except TypeError:
            return None
        found = bound.arguments.get("position_embeddings")
        if found is None:
            found = bound.arguments.get("kwargs", {}).get("position_embeddings")
        if isinstance(found, tuple | list) and len(found) == 2:
            recorder.rotary[id(module)] = (found[0], found[1])
        return None

    return hook


@contextlib.contextmanager
def _attention_set_to(model, name: str):
    before = model.config._attn_implementation
    if before == name:
        yield
        return
    model.set_attn_implementation(name)
    try:
        yield
    finally:
        model.set_attn_implementation(before)


# ---------------------------------------------------------------------------------------------
# rotary grids


def _inv_freq_buffers(model) -> dict[str, np.ndarray]:
    return {
        name: buffer.detach().double().cpu().numpy()
        for name, buffer in model.named_buffers()
        if name.endswith("inv_freq") and not name.endswith("original_inv_freq")
    }


def _grid(model, index: int, record: dict[str, np.ndarray], head_dim: int, buffers) -> RotaryGrid:
    """The rotary grid of layer ``index`` from its cos/sin: the ``inv_freq`` buffer whose angles
    they show (one per layer type in Gemma 3), its scaling and type from the config."""
    cos, sin = record["cos"][0], record["sin"][0]  # [T, R]
    rotary_dim = cos.shape[-1]
    scaling = float(np.hypot(cos[0, 0], sin[0, 0]))
    shown = (
        np.arctan2(sin[1, : rotary_dim // 2], cos[1, : rotary_dim // 2]) if len(cos) > 1 else None
    )
    best, best_gap = None, np.inf
    for name, inv_freq in buffers.items():
        if inv_freq.shape != (rotary_dim // 2,) or shown is None:
            continue
        gap = float(np.max(np.abs(shown - inv_freq) / np.maximum(inv_freq, 1e-12)))
        if gap < best_gap:
            best, best_gap = name, gap
    if best is not None and best_gap < 0.05:
        inv_freq, source = buffers[best], best
    elif shown is not None:
        inv_freq, source = np.asarray(shown, np.float64), "angles of the layer's cos/sin"
    else:
        raise ValueError("need at least 2 tokens to read a layer's rotary frequencies")
    config = text_config(model.config)
    layer_types = getattr(config, "layer_types", None)
    layer_type = layer_types[index] if layer_types and index < len(layer_types) else None
    params = rope_parameters(model.config)
    if layer_type is not None and isinstance(params.get(layer_type), dict):
        params = params[layer_type]
    elif any(isinstance(v, dict) for v in params.values()):
        layer_type = next(
            (k for k in params if isinstance(params[k], dict) and k in source), layer_type
        )
        params = params.get(layer_type, {})
    theta = params.get("rope_theta")
    return RotaryGrid(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        inv_freq=inv_freq,
        attention_scaling=scaling,
        rope_type=str(params.get("rope_type") or params.get("type") or "default"),
        rope_theta=float(theta) if theta is not None else None,
        layer_type=layer_type,
        source=source,
    )


# ---------------------------------------------------------------------------------------------
# capture


def capture(model, tokens, *, probs: bool = True, positions=None) -> Capture:
    """Run ``model`` (a transformers causal LM, e.g. from :func:`load`) on ``tokens [B, T]``
    (no padding) and return its logits, per-layer ``q``, ``k`` (before RoPE), ``q_rot``,
    ``k_rot``, ``v`` and (with ``probs``) ``probs``, and per-layer :class:`RotaryGrid`."""
    import torch

    register()
    ids = torch.as_tensor(np.asarray(tokens), dtype=torch.long)
    if ids.ndim != 2 or ids.shape[1] < 2:
        raise ValueError(f"tokens must be [batch, seq >= 2], got shape {tuple(ids.shape)}")
    recorder = _Recorder(probs)
    hooks = []
    for module in model.modules():
        forward = getattr(type(module), "forward", None)
        if forward is not None and "position_embeddings" in inspect.signature(forward).parameters:
            hooks.append(module.register_forward_pre_hook(_grab_rotary(recorder), with_kwargs=True))
    extra = {} if positions is None else {"position_ids": torch.as_tensor(np.asarray(positions))}
    _ACTIVE.append(recorder)
    try:
        with _attention_set_to(model, ATTENTION), torch.no_grad():
            logits = model(input_ids=ids, use_cache=False, **extra).logits
    finally:
        _ACTIVE.remove(recorder)
        for hook in hooks:
            hook.remove()
    n_layers = text_config(model.config).num_hidden_layers
    if len(recorder.calls) != n_layers:
        raise CaptureError(
            f"recorded {len(recorder.calls)} attention calls for {n_layers} layers; "
            f"{type(model).__name__} does not route every layer through AttentionInterface"
        )
    order = [getattr(m, "layer_idx", i) for i, (m, _) in enumerate(recorder.calls)]
    calls = [recorder.calls[i] for i in np.argsort(order, kind="stable")]
    buffers = _inv_freq_buffers(model)
    layers, grids = [], []
    for index, (_, record) in enumerate(calls):
        grids.append(_grid(model, index, record, record["q"].shape[-1], buffers))
        layers.append({k: v for k, v in record.items() if k not in ("cos", "sin")})
    return Capture(logits.float().cpu().numpy(), layers, grids)


def runner(model, *, probs: bool = False):
    """``run(tokens) -> internals`` for :func:`ropebook.analysis.frequencies.measure`."""

    def run(tokens: np.ndarray) -> list[dict[str, np.ndarray]]:
        return capture(model, tokens, probs=probs).layers

    return run


def describe(model) -> str:
    """One line: family, layers, heads / KV heads, head_dim, parameters."""
    config = text_config(model.config)
    n_heads = config.num_attention_heads
    n_kv = getattr(config, "num_key_value_heads", None) or n_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // n_heads
    n_params = sum(p.numel() for p in model.parameters())
    return (
        f"{config.model_type}: {config.num_hidden_layers} layers, {n_heads} heads / {n_kv} KV "
        f"heads, head_dim {head_dim}, {n_params:,} parameters"
    )


# ---------------------------------------------------------------------------------------------
# tiny random models of every family (tests, the chapter's self-check)

_TINY = dict(
    vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    bos_token_id=1, eos_token_id=2, pad_token_id=0,
)  # fmt: skip


def tiny_config(family: str, **extra):
    """A tiny config of ``family``: hidden 64, 2 layers, 4 query heads over 2 KV heads (GPT-NeoX:
    4 heads, no GQA), with each family's own twist switched on where it has one."""
    import transformers as t

    if family == "llama":
        return t.LlamaConfig(**_TINY, **extra)
    if family == "mistral":
        return t.MistralConfig(**_TINY, sliding_window=8, **extra)
    if family == "qwen2":
        return t.Qwen2Config(**_TINY, **extra)
    if family == "qwen3":
        return t.Qwen3Config(**_TINY, head_dim=16, **extra)
    if family == "gemma":
        return t.GemmaConfig(**_TINY, head_dim=32, **extra)
    if family == "gemma2":
        return t.Gemma2Config(
            **_TINY, head_dim=16, sliding_window=8, attn_logit_softcapping=5.0,
            query_pre_attn_scalar=24, **extra,
        )  # fmt: skip
    if family == "gemma3_text":
        return t.Gemma3TextConfig(
            **_TINY, head_dim=16, sliding_window=8, query_pre_attn_scalar=24,
            layer_types=["sliding_attention", "full_attention"], **extra,
        )  # fmt: skip
    if family == "phi3":
        return t.Phi3Config(**_TINY, **extra)
    if family == "olmo2":
        return t.Olmo2Config(**_TINY, **extra)
    if family == "gpt_neox":
        neox = {k: v for k, v in _TINY.items() if k != "num_key_value_heads"}
        return t.GPTNeoXConfig(**neox, **extra)
    raise ValueError(f"family must be one of {tuple(FAMILIES)}, got {family!r}")


def tiny_random_model(family: str, seed: int = 0, **extra):
    """A random eager model of ``family`` (:func:`tiny_config`), every weight random — norms
    too, so a missing ``1 + w`` or q/k norm would show — scaled to keep logits O(1)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = tiny_config(family, **extra)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                centre = 0.0 if family.startswith("gemma") else 1.0
                param.copy_(centre + 0.3 * torch.randn_like(param))
            else:
                param.copy_(0.08 * torch.randn_like(param))
    return model.eval()
