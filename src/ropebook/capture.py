"""Queries, keys, values and attention of *any* transformers RoPE causal LM, by one generic path.

:mod:`ropebook.hf` re-implements Llama and Gemma in JAX. This module instead lets transformers run
the model and listens: transformers 5 sends every attention layer's call through its
attention-function registry (``transformers.AttentionInterface``), handing the registered function
the layer's queries and keys *after* RoPE and its values. :func:`capture` registers one such
function (``"ropebook_capture"``; it computes attention with the model's own eager function, so
soft-capping, sliding windows and scalings stay the model's), a forward pre-hook on each
attention module reads the position embeddings it was given (``(cos, sin)``, or Llama 4's complex
``freqs_cis``), and the modeling file's own rotation functions (``apply_rotary*``) are watched
while the model runs, to see which layers call them. From those:

- which layers rotate at all: a layer that is handed position embeddings but never calls its
  rotation function (Llama 4's every fourth layer, Command R7B / A's global layers) is *NoPE*;
  its queries and keys are recorded as they are, before = after;
- the pairing, read from the model: the dims that share an angle in its cos/sin are a pair —
  *half* (``(k, k + R/2)``, ``rotate_half``: Llama, Gemma, Qwen, ...) or *interleaved*
  (``(2k, 2k + 1)``: Cohere 2, Llama 4's complex product, Meta's original code). Every rotating
  layer's first rotation call is replayed with that pairing on the call's own input and must
  give back the call's output, else :class:`PairingError`;
- queries and keys *before* RoPE, recovered by rotating back (``x = (y·cos − rot(y)·sin) / (cos² +
  sin²)`` on each pair, float32, ~1e-7 off) — i.e. after whatever the model does first (Qwen 3's
  and OLMo 2's q/k norms); a norm after RoPE (Llama 4's L2 norm) commutes with it;
- each layer's :class:`RotaryGrid`: its attention span (a sliding window, as passed to the
  attention function, or Llama 4's chunks), how many dims rotate (GPT-NeoX / Pythia rotate the
  first 25 %), at which frequencies (the rotary module's ``inv_freq`` buffer whose angles the
  layer's cos/sin show: Gemma 3's and 4's local and global layers get their own; Gemma 4's
  proportional grid sets the slowest planes' frequency to 0: *unrotated*) and the scaling type.

Shapes follow the book: ``q``, ``q_rot`` ``[B, T, H, D]``; ``k``, ``k_rot``, ``v`` ``[B, T, H_kv,
D]`` (grouped-query attention keeps the KV head count; query head ``h`` reads KV head
``h // (H / H_kv)``); ``probs [B, H, T, T]`` float32. ``D`` and ``H_kv`` may differ between layers
(Gemma 4's global layers have their own head size).

:func:`load` first runs :func:`ropebook.preflight.check` on the folder (config, rotary embeddings,
a causal LM, safetensors headers against file sizes, before any weight is read), then refuses
missing or misshapen tensors instead of letting transformers initialise them at random.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import preflight
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
    "gemma4_text": "Gemma 4 (local RoPE θ 10k; global p-RoPE, p = 0.25 at θ 1M, own head size)",
    "llama4_text": "Llama 4 (interleaved complex RoPE, chunked local layers, NoPE every 4th)",
    "cohere2": "Command R7B / A (interleaved RoPE, sliding-window layers, global NoPE layers)",
}
PAIRINGS: tuple[str, ...] = ("half", "interleaved")


@dataclass(frozen=True)
class RotaryGrid:
    """How one layer places positions: its attention span and how it rotates its heads.

    The first ``rotary_dim`` dims of each head take part in RoPE, paired by ``pairing`` (*half*:
    chunk ``k`` is dims ``(k, k + rotary_dim/2)``; *interleaved*: ``(2k, 2k + 1)``) and turned
    at ``inv_freq[k]`` rad/token; a plane at frequency 0 (Gemma 4's proportional grid) and the
    other ``head_dim - rotary_dim`` dims (GPT-NeoX's partial rotary), paired the same way among
    themselves, are *unrotated*. A NoPE layer has ``rotary_dim = 0``. cos/sin are multiplied by
    ``attention_scaling`` (1 except for YaRN / LongRoPE). ``window``: the sliding window its
    attention was called with; ``chunk``: its chunked attention's chunk size (Llama 4); neither:
    global attention.
    """

    head_dim: int
    rotary_dim: int
    inv_freq: np.ndarray  # [rotary_dim / 2], fastest first
    attention_scaling: float = 1.0
    rope_type: str = "default"
    rope_theta: float | None = None
    layer_type: str | None = None
    source: str = ""  # the buffer read, e.g. "model.rotary_emb.inv_freq"
    pairing: str = "half"
    window: int | None = None
    chunk: int | None = None

    @property
    def n_chunks(self) -> int:
        return self.head_dim // 2

    @property
    def partial(self) -> bool:
        return self.rotary_dim < self.head_dim

    @property
    def pairs(self) -> np.ndarray:
        """``[head_dim/2, 2]`` dims of every chunk: the RoPE chunks first (fastest first), then
        the pass-through ones."""
        r, d = self.rotary_dim, self.head_dim
        if self.pairing == "interleaved":
            rotated = [(2 * k, 2 * k + 1) for k in range(r // 2)]
            passing = [(r + 2 * k, r + 2 * k + 1) for k in range((d - r) // 2)]
        else:
            rotated = [(k, k + r // 2) for k in range(r // 2)]
            passing = [(r + k, r + k + (d - r) // 2) for k in range((d - r) // 2)]
        return np.asarray(rotated + passing, dtype=np.int64).reshape(-1, 2)

    @property
    def frequencies(self) -> np.ndarray:
        """``[head_dim/2]`` angular frequency of every chunk of :attr:`pairs` (0: not rotated)."""
        rest = (self.head_dim - self.rotary_dim) // 2
        return np.concatenate([np.asarray(self.inv_freq, np.float64), np.zeros(rest)])

    @property
    def rotated(self) -> np.ndarray:
        """``[head_dim/2]`` bool: which chunks of :attr:`pairs` turn with position."""
        return self.frequencies > 0

    @property
    def n_rotated(self) -> int:
        return int(self.rotated.sum())

    @property
    def encoding(self) -> str:
        """``"RoPE"`` (every plane turns), ``"partial rotary"`` (only the first ``rotary_dim``
        dims do: GPT-NeoX, Phi-3), ``"p-RoPE"`` (the grid's slowest planes are set to 0: Gemma 4)
        or ``"NoPE"`` (no plane turns)."""
        if self.n_rotated == 0:
            return "NoPE"
        if self.n_rotated == self.n_chunks:
            return "RoPE"
        return "partial rotary" if self.partial else "p-RoPE"

    @property
    def scope(self) -> str:
        """``"local"`` (a sliding window or chunks) or ``"global"``."""
        return "local" if self.window is not None or self.chunk is not None else "global"

    def describe_scope(self) -> str:
        if self.window is not None:
            return f"local (sliding window {self.window})"
        if self.chunk is not None:
            return f"local (chunks of {self.chunk})"
        return "global"

    def describe(self) -> str:
        kind = f"{self.layer_type}, " if self.layer_type else ""
        head = f"{kind}{self.describe_scope()}; {self.encoding}"
        if self.encoding == "NoPE":
            return f"{head} (no plane rotates; {self.n_chunks} unrotated planes of {self.head_dim} dims)"
        theta = f"theta {self.rope_theta:,.0f}, " if self.rope_theta else ""
        scale = f", cos/sin x {self.attention_scaling:g}" if self.attention_scaling != 1 else ""
        rotating = np.flatnonzero(self.rotated)
        g = self.frequencies[rotating]
        if self.encoding == "RoPE":
            planes = f"all {self.n_chunks} planes rotate"
        else:
            p = self.n_rotated / self.n_chunks
            unrotated = np.flatnonzero(~self.rotated)
            planes = (
                f"p = {p:.3g}: planes {span_text(rotating)} of {self.n_chunks} rotate, planes "
                f"{span_text(unrotated)} unrotated"
            )
            if self.partial:
                planes += f" (dims {self.rotary_dim}–{self.head_dim - 1} pass through)"
        return (
            f"{head}, {theta}{self.rope_type}, {self.pairing} pairing; {planes}; g from "
            f"{g[0]:.3g} to {g[-1]:.3g} rad/token{scale}"
        )


def span_text(indices) -> str:
    """``[2, 3, 4]`` → "2–4"; ``[5]`` → "5"; else the list."""
    values = [int(i) for i in indices]
    if len(values) > 1 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}–{values[-1]}"
    return ", ".join(map(str, values))


@dataclass
class Capture:
    """One forward pass: ``logits [B, T, V]`` float32, per-layer arrays (see the module
    docstring) and per-layer :class:`RotaryGrid`."""

    logits: np.ndarray
    layers: list[dict[str, np.ndarray]]
    grids: list[RotaryGrid]


def load(path: Path | str, *, dtype: str = "float32"):
    """:func:`ropebook.preflight.check` the folder, then load it with ``AutoModelForCausalLM`` in ``dtype``
    (float32 or bfloat16), set up for :func:`capture`. Tensors the config needs but the files
    lack are an error, not a random initialisation."""
    import torch
    import transformers

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    info = preflight.check(path)
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
        self.current: int | None = None  # id of the module whose forward runs now
        self.spied = False  # the modeling file has rotation functions, watched
        # id(module) -> (input, output) of its first call of a rotation function
        self.rotations: dict[int, tuple[Any, Any]] = {}
        self.calls: list[tuple[Any, dict[str, np.ndarray], dict[str, Any]]] = []


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


def _half_order(r: int, pairing: str) -> np.ndarray:
    """The permutation of the first ``r`` dims that puts ``pairing``'s pairs at ``(k, k + r/2)``."""
    if pairing == "interleaved":
        return np.concatenate([np.arange(0, r, 2), np.arange(1, r, 2)])
    if pairing == "half":
        return np.arange(r)
    raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")


def _in_half_order(x, r: int, pairing: str):
    return x[..., _half_order(r, pairing)]


def _from_half_order(x, r: int, pairing: str):
    return x[..., np.argsort(_half_order(r, pairing))]


def rotate(x, cos, sin, pairing: str = "half"):
    """``x·cos + rot(x)·sin`` on the first ``cos.shape[-1]`` dims of ``x [B, H, T, D]`` (``cos,
    sin [B, T, R]`` in the model's layout), ``rot`` turning each ``pairing`` pair by 90°; float32,
    the other dims pass through."""
    import torch

    r = cos.shape[-1]
    c, s = (_in_half_order(a[:, None].float(), r, pairing) for a in (cos, sin))
    head, rest = _in_half_order(x[..., :r].float(), r, pairing), x[..., r:].float()
    y = head * c + _rotate_half(head) * s
    return torch.cat((_from_half_order(y, r, pairing), rest), dim=-1)


def unrotate(y, cos, sin, pairing: str = "half"):
    """Undo :func:`rotate`: ``x = (y·cos − rot(y)·sin) / (cos² + sin²)`` on the first
    ``cos.shape[-1]`` dims of ``y [B, H, T, D]``, float32; the other dims pass through."""
    import torch

    r = cos.shape[-1]
    c, s = (_in_half_order(a[:, None].float(), r, pairing) for a in (cos, sin))
    head, rest = _in_half_order(y[..., :r].float(), r, pairing), y[..., r:].float()
    x = (head * c - _rotate_half(head) * s) / (c * c + s * s)
    return torch.cat((_from_half_order(x, r, pairing), rest), dim=-1)


def pairing_of(cos, sin) -> str:
    """The pairing a model's ``cos, sin [..., R]`` show: the dims sharing an angle at every
    position are a pair — ``(k, k + R/2)`` (*half*) or ``(2k, 2k + 1)`` (*interleaved*)."""
    import torch

    r = cos.shape[-1]
    if all(torch.equal(a[..., : r // 2], a[..., r // 2 :]) for a in (cos, sin)):
        return "half"
    if all(torch.equal(a[..., 0::2], a[..., 1::2]) for a in (cos, sin)):
        return "interleaved"
    raise CaptureError(
        f"the position embeddings (cos/sin of width {r}) pair dims neither as (k, k + {r // 2}) "
        "nor as (2k, 2k + 1): ropebook.capture cannot read this rotation"
    )


class CaptureError(RuntimeError):
    """The model runs, but not in a way :func:`capture` can read (the message says why)."""


class PairingError(CaptureError):
    """The model rotates otherwise than ``x·cos + rot(x)·sin`` with the pairing its cos/sin show."""


def _check_rotation(module, rotation, cos, sin, pairing: str) -> None:
    """Replay the layer's first call of its rotation function with ``pairing`` and ``cos, sin``
    on that call's own input: it must give the call's output, else the pre-RoPE arrays would
    be wrong. The input may be ``[B, H, T, D]`` or ``[B, T, H, D]``; either layout whose token
    axis fits is tried."""
    x, y = rotation
    t = cos.shape[1]
    layouts = [(x, y)] if x.shape[2] == t else []
    if x.shape[1] == t:
        layouts.append((x.transpose(1, 2), y.transpose(1, 2)))
    scale = float(max(y.abs().max(), 1e-30))
    tolerance = 1e-4 if y.dtype.itemsize >= 4 else 3e-2
    gaps = [
        float((rotate(a, cos, sin, pairing) - b.float()).abs().max()) / scale for a, b in layouts
    ]
    gap = min(gaps, default=float("inf"))
    if gap > tolerance:
        pairs = "(k, k + R/2)" if pairing == "half" else "(2k, 2k + 1)"
        raise PairingError(
            f"{type(module).__module__}'s rotation does not rotate as x·cos + rotate_half(x)·sin "
            f"on the pairs {pairs} its cos/sin show (relative gap {gap:.1e}); ropebook.capture "
            "cannot recover pre-RoPE queries and keys"
        )


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The registered attention function: the module's own eager attention, recorded."""
    out, weights = _eager_for(module)(
        module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
    )
    if _ACTIVE:
        recorder = _ACTIVE[-1]
        embeddings = recorder.rotary.get(id(module))
        # handed position embeddings but never called its rotation function: NoPE
        rotates = embeddings is not None and (
            not recorder.spied or id(module) in recorder.rotations
        )
        pairing = pairing_of(*embeddings) if embeddings is not None else "half"
        if rotates:
            cos, sin = embeddings
            if id(module) in recorder.rotations:
                _check_rotation(module, recorder.rotations[id(module)], cos, sin, pairing)
            q_pre, k_pre = unrotate(query, cos, sin, pairing), unrotate(key, cos, sin, pairing)
        else:
            q_pre, k_pre = query, key
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
        meta: dict[str, Any] = {"pairing": pairing, "window": kwargs.get("sliding_window")}
        if rotates:
            meta["cos"], meta["sin"] = (a.detach().float().cpu().numpy() for a in (cos, sin))
        recorder.calls.append((module, record, meta))
    return out, weights


def register() -> None:
    """Register :data:`ATTENTION` with transformers' attention-function and mask registries
    (masks as for ``eager``: additive float masks with sliding windows applied)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTENTION, _attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)


def _as_cos_sin(found):
    """``(cos, sin)`` from a layer's position embeddings: a ``(cos, sin)`` pair, or a complex
    ``freqs_cis [B, T, R/2]`` (Llama 4: ``x`` viewed as complex pairs ``(2k, 2k + 1)``), whose
    cos/sin are laid out interleaved; ``None`` for anything else."""
    import torch

    if isinstance(found, torch.Tensor) and torch.is_complex(found):
        return tuple(a.repeat_interleave(2, dim=-1) for a in (found.real, found.imag))
    if isinstance(found, tuple | list) and len(found) == 2:
        return found[0], found[1]
    return None


def _grab_rotary(recorder: _Recorder):
    def hook(module, args, kwargs):
        try:
            bound = inspect.signature(module.forward).bind_partial(*args, **kwargs)
        except TypeError:
            return None
        found = bound.arguments.get("position_embeddings")
        if found is None:
            found = bound.arguments.get("kwargs", {}).get("position_embeddings")
        cos_sin = _as_cos_sin(found)
        if cos_sin is not None:
            recorder.rotary[id(module)] = cos_sin
        recorder.current = id(module)  # the attention module's hook runs after its layer's
        return None

    return hook


def _spy(function):
    """``function`` (a modeling file's ``apply_rotary*``), noting per module its first call."""

    @functools.wraps(function)
    def spy(*args, **kwargs):
        out = function(*args, **kwargs)
        recorder = _ACTIVE[-1] if _ACTIVE else None
        if recorder is not None and recorder.current is not None and args:
            first = out[0] if isinstance(out, tuple | list) else out
            recorder.rotations.setdefault(recorder.current, (args[0], first))
        return out

    return spy


@contextlib.contextmanager
def _rotations_watched(modules, recorder: _Recorder):
    """Replace every ``apply_rotary*`` function of the modeling files of ``modules`` by a
    :func:`_spy` while the block runs."""
    files = {sys.modules.get(type(m).__module__) for m in modules} - {None}
    patched = [
        (file, name, getattr(file, name))
        for file in files
        for name in dir(file)
        if name.startswith("apply_rotary") and callable(getattr(file, name))
    ]
    recorder.spied = bool(patched)
    for file, name, function in patched:
        setattr(file, name, _spy(function))
    try:
        yield
    finally:
        for file, name, function in patched:
            setattr(file, name, function)


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


def _layer_type(config, index: int) -> str | None:
    layer_types = getattr(config, "layer_types", None)
    return layer_types[index] if layer_types and index < len(layer_types) else None


def _attention_span(config, layer_type: str | None, window) -> tuple[int | None, int | None]:
    """``(window, chunk)`` of a layer: the sliding window its attention was called with, or the
    chunk size of a ``chunked_attention`` layer (Llama 4)."""
    chunk = (
        getattr(config, "attention_chunk_size", None) if layer_type == "chunked_attention" else None
    )
    return (int(window) if window else None), (int(chunk) if chunk else None)


def _nope_grid(model, index: int, meta: dict[str, Any], head_dim: int) -> RotaryGrid:
    config = preflight.text_config(model.config)
    layer_type = _layer_type(config, index)
    window, chunk = _attention_span(config, layer_type, meta["window"])
    return RotaryGrid(
        head_dim=head_dim, rotary_dim=0, inv_freq=np.zeros(0), rope_type="none",
        layer_type=layer_type, source="no rotation call", pairing=meta["pairing"],
        window=window, chunk=chunk,
    )  # fmt: skip


def _grid(model, index: int, meta: dict[str, Any], head_dim: int, buffers) -> RotaryGrid:
    """The rotary grid of layer ``index`` from its cos/sin: the ``inv_freq`` buffer whose angles
    they show (one per layer type in Gemma 3 and 4), its scaling and type from the config."""
    if "cos" not in meta:
        return _nope_grid(model, index, meta, head_dim)
    pairing = meta["pairing"]
    rotary_dim = meta["cos"].shape[-1]
    cos, sin = (_in_half_order(meta[a][0], rotary_dim, pairing) for a in ("cos", "sin"))  # [T, R]
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
    config = preflight.text_config(model.config)
    layer_type = _layer_type(config, index)
    params = preflight.rope_parameters(model.config)
    if layer_type is not None and isinstance(params.get(layer_type), dict):
        params = params[layer_type]
    elif any(isinstance(v, dict) for v in params.values()):
        layer_type = next(
            (k for k in params if isinstance(params[k], dict) and k in source), layer_type
        )
        params = params.get(layer_type, {})
    theta = params.get("rope_theta")
    window, chunk = _attention_span(config, layer_type, meta["window"])
    return RotaryGrid(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        inv_freq=inv_freq,
        attention_scaling=scaling,
        rope_type=str(params.get("rope_type") or params.get("type") or "default"),
        rope_theta=float(theta) if theta is not None else None,
        layer_type=layer_type,
        source=source,
        pairing=pairing,
        window=window,
        chunk=chunk,
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
    hooks, positional = [], []
    for module in model.modules():
        forward = getattr(type(module), "forward", None)
        if forward is not None and "position_embeddings" in inspect.signature(forward).parameters:
            hooks.append(module.register_forward_pre_hook(_grab_rotary(recorder), with_kwargs=True))
            positional.append(module)
    extra = {} if positions is None else {"position_ids": torch.as_tensor(np.asarray(positions))}
    _ACTIVE.append(recorder)
    try:
        with (
            _attention_set_to(model, ATTENTION),
            _rotations_watched(positional, recorder),
            torch.no_grad(),
        ):
            logits = model(input_ids=ids, use_cache=False, **extra).logits
    finally:
        _ACTIVE.remove(recorder)
        for hook in hooks:
            hook.remove()
    n_layers = preflight.text_config(model.config).num_hidden_layers
    if len(recorder.calls) != n_layers:
        raise CaptureError(
            f"recorded {len(recorder.calls)} attention calls for {n_layers} layers; "
            f"{type(model).__name__} does not route every layer through AttentionInterface"
        )
    order = [getattr(m, "layer_idx", i) for i, (m, _, _) in enumerate(recorder.calls)]
    calls = [recorder.calls[i] for i in np.argsort(order, kind="stable")]
    buffers = _inv_freq_buffers(model)
    layers, grids = [], []
    for index, (_, record, meta) in enumerate(calls):
        grids.append(_grid(model, index, meta, record["q"].shape[-1], buffers))
        layers.append(record)
    if not any(grid.n_rotated for grid in grids):
        raise CaptureError(
            f"no layer of {type(model).__name__} rotates its queries and keys: not a RoPE model"
        )
    return Capture(logits.float().cpu().numpy(), layers, grids)


def per_query_head(layer: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One captured layer per query head: keys and values repeated from their KV heads to the
    query heads that read them (grouped-query attention), and ``scores [B, H, T, T]``, the scaled
    dot products ``q_rot · k_rot / sqrt(D)`` with ``-inf`` above the diagonal: the model's own
    pre-softmax scores wherever it adds nothing to them (no soft-capping, bias or window)."""
    group = layer["q"].shape[2] // layer["k"].shape[2]
    out = dict(layer)
    for name in ("k", "k_rot", "v"):
        out[name] = np.repeat(layer[name], group, axis=2)
    t, d = layer["q"].shape[1], layer["q"].shape[-1]
    scores = np.einsum("bqhd,bkhd->bhqk", layer["q_rot"], out["k_rot"]) / np.sqrt(d)
    out["scores"] = np.where(np.tri(t, dtype=bool), scores, -np.inf)
    return out


def per_head_batches(model, windows, *, batch_size: int = 4):
    """``(tokens, layers, pairing)`` for each batch of ``windows [W, T]``: the model captured
    (:func:`capture`), its layers :func:`per_query_head`, and the pairing every layer shares.
    For readings that take every plane of a head in fastest-first order over the whole causal
    window, so a model with a layer that leaves planes unrotated (p-RoPE, partial rotary, NoPE)
    or attends locally (a sliding window, chunks) is refused."""
    windows = np.asarray(windows)
    for start in range(0, len(windows), batch_size):
        tokens = windows[start : start + batch_size]
        found = capture(model, tokens)
        pairings = {grid.pairing for grid in found.grids}
        if len(pairings) != 1 or any(
            grid.partial or not grid.n_rotated or grid.window or grid.chunk for grid in found.grids
        ):
            raise CaptureError(
                f"{type(model).__name__}: these readings need every layer global and rotating "
                f"every plane, paired alike ({describe(model)})"
            )
        yield tokens, [per_query_head(layer) for layer in found.layers], pairings.pop()


def runner(model, *, probs: bool = False):
    """``run(tokens) -> internals`` for :func:`ropebook.analysis.frequencies.measure`."""

    def run(tokens: np.ndarray) -> list[dict[str, np.ndarray]]:
        return capture(model, tokens, probs=probs).layers

    return run


def _per_layer(model, name: str, default: int) -> str:
    """A config value, or "a / b (per layer)" where layers differ (Gemma 4's global layers)."""
    config = preflight.text_config(model.config)
    try:
        value = getattr(config, name, None)
    except Exception:  # noqa: BLE001 - transformers refuses a global value that differs per layer
        value = None
    if value is not None:
        return str(value)
    per_layer = getattr(config, "per_layer_config", None)
    if per_layer is not None:
        values = []
        for index in range(config.num_hidden_layers):
            found = getattr(per_layer[index], name, None)
            if found is not None and found not in values:
                values.append(found)
        if len(values) > 1:
            return " / ".join(map(str, values)) + " (per layer)"
        if values:
            return str(values[0])
    return str(default)


def describe(model) -> str:
    """One line: family, layers, heads / KV heads, head_dim, parameters."""
    config = preflight.text_config(model.config)
    n_heads = config.num_attention_heads
    n_kv = _per_layer(model, "num_key_value_heads", n_heads)
    head_dim = _per_layer(model, "head_dim", config.hidden_size // n_heads)
    n_params = sum(p.numel() for p in model.parameters())
    return (
        f"{config.model_type}: {config.num_hidden_layers} layers, {n_heads} heads / {n_kv} KV "
        f"heads, head_dim {head_dim}, {n_params:,} parameters"
    )
